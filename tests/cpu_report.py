"""Sum the CPU times that ``ASTAD_TEST_CPU=PATH python -m pytest`` wrote (``PATH.<worker>``, see
tests/conftest.py) per test file, heaviest first: ``python tests/cpu_report.py PATH [N]``."""

import collections
import glob
import sys


def main(path, top=40):
    per_file, count, per_worker, slowest = collections.Counter(), collections.Counter(), {}, []
    overhead = 0.0
    for name in sorted(glob.glob(path + ".gw*") + glob.glob(path + ".main") + glob.glob(path + ".controller")):
        tests = 0.0
        for line in open(name):
            cpu, child, nodeid = line.rstrip("\n").split("\t")
            cpu, child = float(cpu), float(child)
            if nodeid == "(process)":  # (a controller's children are its workers: counted by them)
                own = cpu if name.endswith(".controller") else cpu + child
                overhead += own - tests
                per_worker[name.rsplit(".", 1)[1]] = own
                continue
            tests += cpu + child
            f = nodeid.split("::")[0]
            per_file[f] += cpu + child
            count[f] += 1
            slowest.append((cpu + child, nodeid))
    total = sum(per_file.values())
    print(f"tests {total:.1f} s CPU, processes {sum(per_worker.values()):.1f} s "
          f"(start, collection and between tests {overhead:.1f} s); per worker: "
          + ", ".join(f"{w} {s:.1f}" for w, s in sorted(per_worker.items())))
    for f, s in per_file.most_common(top):
        print(f"{s:8.2f} {count[f]:5d} {f}")
    print("slowest tests:")
    for s, nodeid in sorted(slowest, reverse=True)[:top]:
        print(f"{s:8.2f} {nodeid}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 40)
