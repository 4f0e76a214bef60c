"""dlaunch ui and dlaunch metrics as a team would use them: a real browser
(Debian's headless Chromium) on the jobs page and a job's page while the job
runs, a log line written after the page was opened, TensorBoard scalars of
mnist_dist drawn as points; a real Prometheus scraping /metrics; promtool on
`dlaunch metrics`; and who may read the page (a token off loopback, the Host
header on it, a log line holding <script> shown as text)."""

import json
import os
import re
import shutil
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
import cdp_browser  # noqa: E402
import harness  # noqa: E402
import mnist_helpers as mh  # noqa: E402
from harness import DlaunchTestCase, wait_for, wait_for_text  # noqa: E402

PY = "/usr/bin/python3"
PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
# Screenshots stay after the test, beside the build that was tested.
OUTPUT = os.environ.get("DLAUNCH_TEST_OUTPUT") or os.path.join(
    os.path.dirname(harness.BIN_DIR), "test-output", "test_ui")

# A rank that prints a line, waits for <dir>/go, prints a line holding
# markup, waits for <dir>/end and exits.
RANK = r"""
import os, sys, time
d, r = sys.argv[1], os.environ["RANK"]
print(f"first line of rank {r}", flush=True)
while not os.path.exists(os.path.join(d, "go")):
    time.sleep(0.05)
print(f"after the page opened <script>document.title='owned'</script> rank {r}", flush=True)
while not os.path.exists(os.path.join(d, "end")):
    time.sleep(0.05)
"""


def tfevents_scalars(path):
    """(tag, step, value) of an event file, read here independently of dlaunch
    (mnist_helpers checks both CRCs of every record)."""
    return [(tag, e["step"], value) for e in mh.read_events(path)
            for tag, value in e.get("scalars", {}).items()]


class UiCase(DlaunchTestCase):
    def start_ui(self, *args, listen="127.0.0.1:0"):
        out = harness.open_output(self, "ui.out")
        self.ui = self.start_dlaunch(["ui", "--listen", listen, *args], stdout=out)
        wait_for_text(os.path.join(self.tmp, "ui.out"), "http://", timeout=30)
        with open(os.path.join(self.tmp, "ui.out")) as f:
            self.url = re.search(r"(http://\S+/),", f.read()).group(1)
        return self.url

    def get(self, path, headers=None):
        req = urllib.request.Request(self.url.rstrip("/") + path, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, dict(r.headers), r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read().decode()

    def start_job(self, ranks=2):
        job = self.job_name("ui")
        rank = self.write("rank.py", RANK)
        r = self.run_dlaunch(["-d", "--name", job, "-n", str(ranks), "--", PY, rank, self.tmp])
        self.assertEqual(r.returncode, 0, r.stderr)
        wait_for_text(os.path.join(self.state, job, "rank-0.log"), "first line", timeout=60)
        return job

    def end_job(self, job):
        open(os.path.join(self.tmp, "go"), "w").close()
        open(os.path.join(self.tmp, "end"), "w").close()
        wait_for(lambda: json.loads(self.run_dlaunch(["get", job, "--json"]).stdout)["status"]
                 == "SUCCEEDED", timeout=60)


@unittest.skipUnless(cdp_browser.CHROMIUM, "missing: chromium (Debian's chromium package)")
class BrowserTest(UiCase):
    def setUp(self):
        super().setUp()
        self.browser = None

    def tearDown(self):
        if self.browser:
            self.browser.close()
        super().tearDown()

    def test_the_jobs_page_and_a_running_job_s_page_with_its_log_followed(self):
        job = self.start_job()
        url = self.start_ui()
        self.browser = cdp_browser.Browser()
        self.browser.open(url)
        row = f'document.querySelector(\'tr[data-job="{job}"]\')'
        text = self.browser.wait_for(f"{row} && {row}.innerText")
        self.assertIn(job, text)
        self.assertIn("RUNNING", text)
        self.assertIn("localhost", text)  # its host
        print("screenshot:", self.browser.screenshot(os.path.join(OUTPUT, "jobs.png")))

        self.browser.open(url + "job/" + job)
        log = "document.getElementById('log') && document.getElementById('log').textContent"
        self.assertIn("first line of rank 0", self.browser.wait_for(log))
        hosts = self.browser.wait_for("document.getElementById('summary').innerText")
        self.assertIn("localhost", hosts)
        # Written after the page was opened: the page follows the log.
        open(os.path.join(self.tmp, "go"), "w").close()
        line = "after the page opened <script>document.title='owned'</script> rank 0"
        self.browser.wait_for(f"({log}).includes({json.dumps(line)})")
        # Shown as text: no element came of it, and it did not run.
        self.assertEqual(self.browser.evaluate("document.querySelectorAll('#log *').length"), 0)
        self.assertNotEqual(self.browser.evaluate("document.title"), "owned")
        print("screenshot:", self.browser.screenshot(os.path.join(OUTPUT, "job.png")))
        # Rank 1's log, chosen as a user would.
        self.browser.evaluate("const s = document.getElementById('log-rank'); s.value = '1';"
                              "s.dispatchEvent(new Event('change')); true")
        self.browser.wait_for(f"({log}).includes('first line of rank 1')")
        # Every rank's stack, gathered by `dlaunch stacks`, grouped on the page.
        r = self.run_dlaunch(["stacks", job])
        self.assertEqual(r.returncode, 0, r.stderr)
        stacks = ("document.getElementById('stacks-text') && "
                  "document.getElementById('stacks-text').textContent")
        self.assertIn("ranks 0-1 (2 ranks)", self.browser.wait_for(stacks))
        # top: the job's host with its ranks.
        self.browser.open(url + "top")
        host = 'document.querySelector(\'tr[data-host="localhost"]\')'
        row = self.browser.wait_for(f"{host} && {host}.innerText")
        self.assertIn(job, row)
        self.assertRegex(row, r"\b2\b")
        # top job: the job's row, sampled here.
        top_row = f'document.querySelector(\'#top-jobs tr[data-job="{job}"]\')'
        self.assertIn("RUNNING", self.browser.wait_for(f"{top_row} && {top_row}.innerText"))
        print("screenshot:", self.browser.screenshot(os.path.join(OUTPUT, "top.png")))
        self.browser.open(url + "job/" + job)
        self.end_job(job)
        self.browser.wait_for("document.querySelector('#summary .status').textContent"
                              " === 'SUCCEEDED'")

    @unittest.skipUnless(os.access(mh.MNIST, os.X_OK),
                         f"not built: {mh.MNIST} (needs LibTorch: libtorch-dev libgloo-dev)")
    def test_tensorboard_scalars_are_drawn_as_their_points(self):
        job = self.job_name("ui-tb")
        runs = os.path.join(self.tmp, "runs")
        r = self.run_dlaunch(["--name", job, "-n", "2", "--tensorboard-dir", runs, "--",
                              mh.MNIST, "--synthetic", "1024", "--epochs", "2",
                              "--log-interval", "4", "--dir", runs], timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        files = [f for f in os.listdir(runs) if "tfevents" in f]
        self.assertEqual(len(files), 1, files)
        written = tfevents_scalars(os.path.join(runs, files[0]))
        tags = sorted({t for t, _, _ in written})
        self.assertTrue(tags, "mnist_dist wrote no scalars")
        url = self.start_ui()
        self.browser = cdp_browser.Browser()
        self.browser.open(url + "job/" + job)
        self.browser.wait_for("document.querySelectorAll('svg[data-tag] circle').length > 0")
        drawn = self.browser.evaluate(
            "Array.from(document.querySelectorAll('svg[data-tag]')).map(s => [s.dataset.tag,"
            " Array.from(s.querySelectorAll('circle')).map(c => [Number(c.dataset.step),"
            " Number(c.dataset.value)])])")
        self.assertEqual(sorted(t for t, _ in drawn), tags)
        for tag, points in drawn:
            want = [(s, v) for t, s, v in written if t == tag]
            self.assertEqual(len(points), len(want), tag)
            for (step, value), (want_step, want_value) in zip(points, want):
                self.assertEqual(step, want_step, tag)
                self.assertAlmostEqual(value, want_value, places=5, msg=tag)
        print("screenshot:", self.browser.screenshot(os.path.join(OUTPUT, "scalars.png")))


@unittest.skipUnless(PROMETHEUS and PROMTOOL, "missing: prometheus (Debian's prometheus package)")
class PrometheusTest(UiCase):
    def test_prometheus_scrapes_the_ranks_then_the_final_status(self):
        job = self.start_job(ranks=3)
        url = self.start_ui()
        port = harness.free_port()
        config = self.write("prometheus.yml", f"""
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: dlaunch
    static_configs:
      - targets: ['{urllib.parse.urlparse(url).netloc}']
""")
        prom = subprocess.Popen(
            [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={self.tmp}/tsdb",
             f"--web.listen-address=127.0.0.1:{port}"],
            stdout=subprocess.DEVNULL, stderr=harness.open_output(self, "prometheus.log"))
        self.procs.append(prom)

        def query(expr):
            q = urllib.parse.urlencode({"query": expr})
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/query?{q}",
                                            timeout=10) as r:
                    return json.load(r)["data"]["result"]
            except (urllib.error.URLError, ConnectionError):
                return []

        ranks = f'dlaunch_job_ranks{{job_name="{job}"}}'
        got = wait_for(lambda: query(ranks), timeout=60)
        self.assertTrue(got, "Prometheus never had " + ranks)
        answer = query(ranks)
        print(f"query {ranks}: {json.dumps(answer)}")
        self.assertEqual(answer[0]["value"][1], "3")
        self.end_job(job)
        final = f'dlaunch_job_status{{job_name="{job}",status="succeeded"}}'
        self.assertTrue(wait_for(lambda: query(final), timeout=60), "no final status")
        answer = query(final)
        print(f"query {final}: {json.dumps(answer)}")
        self.assertEqual(answer[0]["value"][1], "1")

    def test_promtool_passes_dlaunch_metrics_while_a_job_runs_and_after(self):
        job = self.start_job()
        for when in ("running", "ended"):
            out = os.path.join(self.tmp, "textfile", "dlaunch.prom")
            os.makedirs(os.path.dirname(out), exist_ok=True)
            r = self.run_dlaunch(["metrics", "--output", out])
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                text = f.read()
            self.assertEqual(os.listdir(os.path.dirname(out)), ["dlaunch.prom"])  # no temporary
            check = subprocess.run([PROMTOOL, "check", "metrics"], input=text, text=True,
                                   capture_output=True)
            self.assertEqual(check.returncode, 0, check.stdout + check.stderr + text)
            status = "running" if when == "running" else "succeeded"
            self.assertIn(f'dlaunch_job_status{{job_name="{job}",status="{status}"}} 1', text)
            self.assertIn(f'dlaunch_jobs{{status="{status}"}} 1', text)
            if when == "running":
                self.assertIn(f'dlaunch_job_ranks{{job_name="{job}"}} 2', text)
                self.assertIn(f'dlaunch_job_stalled{{job_name="{job}"}} 0', text)
                self.assertRegex(text, rf'dlaunch_job_seconds_since_output{{job_name="{job}"}} \d')
                self.end_job(job)


class AccessTest(UiCase):
    def test_another_address_without_a_token_is_refused(self):
        r = self.run_dlaunch(["ui", "--listen", "0.0.0.0:0"], timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--listen 0.0.0.0:0: an address other than loopback needs --token-file",
                      r.stderr)

    def test_with_a_token_a_request_without_it_gets_401(self):
        token = "a1b2c3d4e5f60718293a4b5c6d7e8f90"
        token_file = self.write("token", token + "\n", mode=0o600)
        self.start_job()
        # Every address; this test reaches it through loopback only.
        url = self.start_ui("--token-file", token_file, listen="0.0.0.0:0")
        self.assertTrue(url.startswith("http://0.0.0.0:"), url)
        self.url = url.replace("0.0.0.0", "127.0.0.1")
        status, headers, body = self.get("/api/jobs")
        self.assertEqual(status, 401, body)
        self.assertIn("Bearer", headers.get("WWW-Authenticate", ""))
        status, _, body = self.get("/api/jobs", {"Authorization": "Bearer wrong-token-wrong"})
        self.assertEqual(status, 401)
        status, _, body = self.get("/api/jobs", {"Authorization": f"Bearer {token}"})
        self.assertEqual(status, 200, body)
        self.assertEqual(len(json.loads(body)["jobs"]), 1)
        status, _, _ = self.get("/metrics")
        self.assertEqual(status, 401)
        # A browser opens ?token= once: a cookie, and the URL without it.
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        with opener.open(self.url + "?token=" + token, timeout=30) as r:
            self.assertEqual(r.status, 200)
            self.assertEqual(r.url, self.url)
        with opener.open(self.url + "api/jobs", timeout=30) as r:
            self.assertEqual(r.status, 200)

    def test_on_loopback_another_host_name_is_refused(self):
        self.start_ui()
        status, _, _ = self.get("/api/jobs", {"Host": "attacker.example:8697"})
        self.assertEqual(status, 403)
        status, _, _ = self.get("/api/jobs", {"Host": "localhost:8697"})
        self.assertEqual(status, 200)

    def test_a_log_line_holding_markup_comes_back_as_its_bytes(self):
        job = self.start_job()
        self.start_ui()
        open(os.path.join(self.tmp, "go"), "w").close()
        wait_for_text(os.path.join(self.state, job, "rank-0.log"), "after the page", timeout=30)
        status, headers, body = self.get(f"/api/jobs/{job}/log?rank=0&offset=0")
        self.assertEqual(status, 200)
        self.assertTrue(headers["Content-Type"].startswith("text/plain"))
        self.assertEqual(headers["X-Content-Type-Options"], "nosniff")
        self.assertIn("<script>document.title='owned'</script>", body)
        self.assertEqual(int(headers["X-Dlaunch-Next-Offset"]), len(body.encode()))
        status, _, _ = self.get(f"/api/jobs/{job}/log?rank=9")
        self.assertEqual(status, 404)
        self.end_job(job)


if __name__ == "__main__":
    harness.require_binaries()
    harness.main(verbosity=2)
