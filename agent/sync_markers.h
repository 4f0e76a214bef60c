// --sync into a directory that several hosts of one job share: two hosts on
// one machine, or an NFS home on a cluster. The first agent of the run to
// claim the directory receives the tree; the others wait until it is written
// and then only compare, so the tree travels once and no two agents write the
// same files at the same moment.
//
// The claim is a file created with O_EXCL in the destination (exclusive on
// local filesystems and on NFS v3 and later), named after the run: a tag made
// from the job's secret, so that no earlier run's leftover marker matches.
// The owner publishes a second file once everything is in place (after its
// renames, so a follower that sees it sees the files), and removes both when
// the ranks are assigned: by then every follower has compared and reported.
#pragma once

#include <string>
#include <string_view>

namespace dlaunch {

// Every file the sync makes for itself starts with this: the markers and
// the temporary files a file is written into before its rename. --sync-delete
// never removes them (another host's may be in flight in a shared directory).
inline constexpr std::string_view kSyncFilePrefix = ".dlaunch-sync-";

struct SyncMarkers {
  std::string owner;  // <dest>/.dlaunch-sync-<tag>.owner
  std::string done;   // <dest>/.dlaunch-sync-<tag>.done
};

// The markers of this run in `dest`; `secret` is the job's.
SyncMarkers sync_markers(const std::string& dest, std::string_view secret);

// True when this agent owns the destination (it made the owner marker, or the
// filesystem cannot hold one: then it syncs as if alone); false when another
// agent of this run claimed it first.
bool claim_sync_destination(const SyncMarkers& markers);
// The owner's tree is in place (or it gave up: the job fails then anyway).
void publish_sync_done(const SyncMarkers& markers);
bool sync_done_published(const SyncMarkers& markers);
void remove_sync_markers(const SyncMarkers& markers);

}  // namespace dlaunch
