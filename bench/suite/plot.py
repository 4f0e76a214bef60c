"""PNG plots drawn by gnuplot from data files written next to its script; the
script is fed on stdin, so nothing but the PNG is left behind."""

import os
import subprocess
import tempfile


def _terminal():
    # pngcairo (gnuplot-nox has it) draws anti-aliased text; plain png is the fallback.
    r = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True, text=True)
    return "pngcairo" if "pngcairo" in r.stdout + r.stderr else "png"


def _quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _run(script, out):
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    r = subprocess.run(["gnuplot"], input=script, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(f"gnuplot failed for {out}: {r.stderr[-600:]}")


def lines(out, title, xlabel, ylabel, series, logx=False, logy=False):
    """`series`: {name: [(x, y, ylow, yhigh), ...]}: one line per name with
    min-max error bars."""
    with tempfile.TemporaryDirectory(prefix="dlaunch-bench-plot-") as tmp:
        plots = []
        for i, (name, points) in enumerate(series.items()):
            data = os.path.join(tmp, f"{i}.dat")
            with open(data, "w") as f:
                f.writelines(f"{x} {y} {lo} {hi}\n" for x, y, lo, hi in sorted(points))
            plots.append(f"{_quote(data)} using 1:2:3:4 with yerrorlines lw 2 pt 7 "
                         f"title {_quote(name)}")
        script = (f"set terminal {_terminal()} size 900,560\nset output {_quote(out)}\n"
                  f"set title {_quote(title)}\nset xlabel {_quote(xlabel)}\n"
                  f"set ylabel {_quote(ylabel)}\nset grid\nset key top left\n"
                  + ("set logscale x 2\n" if logx else "")
                  + ("set logscale y\n" if logy else "")
                  + "set offsets graph 0.05, graph 0.05, 0, 0\n"
                  + "plot " + ", \\\n  ".join(plots) + "\n")
        _run(script, out)


def bars(out, title, ylabel, bars_, logy=False, fmt="%.0f", enhanced=True, slanted=False):
    """`bars_`: [(name, median, low, high)]: one bar per name, min-max error bars,
    each labelled with its median in the printf format `fmt`. `enhanced=False`:
    text as written (gnuplot's enhanced text makes `_` a subscript). `slanted`:
    the names at an angle, for many or long ones."""
    with tempfile.TemporaryDirectory(prefix="dlaunch-bench-plot-") as tmp:
        data = os.path.join(tmp, "bars.dat")
        with open(data, "w") as f:
            f.writelines(f"{i} {y} {lo} {hi} {_quote(name)}\n"
                         for i, (name, y, lo, hi) in enumerate(bars_))
        script = (f"set terminal {_terminal()} size 900,560\nset output {_quote(out)}\n"
                  f"set title {_quote(title)}\nset ylabel {_quote(ylabel)}\nset grid ytics\n"
                  "set style fill solid 0.6 border -1\nset boxwidth 0.6\nunset key\n"
                  f"set xrange [-0.6:{len(bars_) - 0.4}]\n"
                  + ("" if enhanced else "set termoption noenhanced\n")
                  + ("set xtics rotate by -30 left\nset bmargin 8\n" if slanted else "")
                  + ("set logscale y\n" if logy else "set yrange [0:*]\n")
                  + f"plot {_quote(data)} using 1:2:xtic(5) with boxes, \\\n"
                  f"  '' using 1:2:3:4 with yerrorbars lc rgb 'black' pt 0, \\\n"
                  f"  '' using 1:2:(sprintf({_quote(fmt)}, $2)) with labels offset 0,1\n")
        _run(script, out)
