#!/usr/bin/env python3
"""rdzvd's /metrics read by the real Prometheus tools.

  metrics_prometheus_test.py promtool RDZVD RDZV_BENCH
      `promtool check metrics` must accept a scrape taken after a 64-participant round.
  metrics_prometheus_test.py prometheus RDZVD RDZV_BENCH
      A real Prometheus on loopback (temporary config and storage, 1 s scrape interval) scrapes
      rdzvd while rdzv-bench runs a 64-participant round; its HTTP API must then report the
      members reaching 64, joins_total >= 64 and at least one completed round.

Exits 77 (ctest: skipped) when the tool it needs is not installed.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

PARTICIPANTS = 64
RDZV_ID = "metrics.0"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, check, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    sys.exit(f"FAIL: {what} within {timeout} s")


def http_get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.read().decode()
    except OSError:
        return None


class Rdzvd:
    """rdzvd in step mode on loopback with /metrics on an ephemeral port (read from its log)."""

    def __init__(self, binary, scratch):
        token = os.path.join(scratch, "token")
        with open(token, "w") as f:
            f.write("metrics-test-token\n")
        os.chmod(token, 0o600)
        self.token = "metrics-test-token"
        self.log_path = os.path.join(scratch, "rdzvd.log")
        self.port_file = os.path.join(scratch, "port")
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(
                [binary, "--mode", "step", "--rdzv-id", RDZV_ID, "--token-file", token, "--listen", "127.0.0.1:0",
                 "--port-file", self.port_file, "--metrics-listen", "127.0.0.1:0", "--heartbeat-timeout", "60000"],
                stdout=subprocess.DEVNULL, stderr=log)
        wait_for("rdzvd writes its port file", lambda: os.path.exists(self.port_file), 10)
        with open(self.port_file) as f:
            self.port = int(f.read())
        with open(self.log_path) as f:
            found = re.search(r"metrics on http://127\.0\.0\.1:(\d+)/metrics", f.read())
        if not found:
            sys.exit("FAIL: rdzvd logged no metrics address")
        self.metrics_port = int(found.group(1))

    def stop(self):
        self.process.terminate()
        self.process.wait(10)


def run_bench(bench, rdzvd, hold_ms=None):
    hold = ["--hold", str(hold_ms)] if hold_ms else []
    subprocess.run([bench, "--participants", str(PARTICIPANTS), "--endpoint", f"127.0.0.1:{rdzvd.port}",
                    "--id", RDZV_ID, "--token", rdzvd.token, "--timeout", "60"] + hold,
                   check=True, stdout=subprocess.DEVNULL)


def check_promtool(rdzvd, bench, scratch):
    promtool = shutil.which("promtool")
    if not promtool:
        print("SKIP: promtool is not installed (Debian package prometheus)")
        return 77
    run_bench(bench, rdzvd)
    page = http_get(f"http://127.0.0.1:{rdzvd.metrics_port}/metrics")
    assert page and "rdzvd_joins_total 64\n" in page, page
    checked = subprocess.run([promtool, "check", "metrics"], input=page, text=True, capture_output=True)
    print(checked.stdout + checked.stderr)
    if checked.returncode != 0:
        sys.exit(f"FAIL: promtool check metrics rejected the page (exit {checked.returncode})")
    print(f"promtool accepts the page ({len(page.splitlines())} lines)")
    return 0


def check_prometheus(rdzvd, bench, scratch):
    prometheus = shutil.which("prometheus")
    if not prometheus:
        print("SKIP: prometheus is not installed (Debian package prometheus)")
        return 77
    web = free_port()
    config = os.path.join(scratch, "prometheus.yml")
    with open(config, "w") as f:
        f.write(f"""global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: rdzvd
    static_configs:
      - targets: ["127.0.0.1:{rdzvd.metrics_port}"]
""")
    with open(os.path.join(scratch, "prometheus.log"), "w") as log:
        server = subprocess.Popen([prometheus, f"--config.file={config}",
                                   f"--storage.tsdb.path={os.path.join(scratch, 'tsdb')}",
                                   f"--web.listen-address=127.0.0.1:{web}"], stdout=log, stderr=subprocess.STDOUT)
    try:
        def query(expression):
            text = http_get(f"http://127.0.0.1:{web}/api/v1/query?" + urllib.parse.urlencode({"query": expression}))
            if not text:
                return None
            reply = json.loads(text)
            result = reply["data"]["result"] if reply.get("status") == "success" else []
            return float(result[0]["value"][1]) if result else None

        wait_for("Prometheus scrapes rdzvd (up == 1)", lambda: query('up{job="rdzvd"}') == 1, 20)
        # The round is held for 2.5 s after it completes, so 1 s scrapes see its 64 members.
        run_bench(bench, rdzvd, 2500)
        def reaches(expression, at_least):
            value = wait_for(f"Prometheus reports {expression} >= {at_least}",
                             lambda: (lambda v: v if v is not None and v >= at_least else None)(query(expression)), 10)
            print(f"Prometheus: {expression} = {value:g}")
            return value

        members = reaches("max_over_time(rdzvd_members[5m])", PARTICIPANTS)
        if members != PARTICIPANTS:
            sys.exit(f"FAIL: rdzvd_members peaked at {members:g}, not {PARTICIPANTS}")
        reaches("rdzvd_joins_total", PARTICIPANTS)
        reaches("rdzvd_rounds_completed_total", 1)
        reaches('rdzvd_rpcs_total{method="Session",code="OK"}', PARTICIPANTS)
        reaches('rdzvd_kv_request_duration_seconds_count{method="Wait"}', PARTICIPANTS)
        return 0
    finally:
        server.terminate()
        server.wait(10)


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("promtool", "prometheus"):
        sys.exit(__doc__)
    check = check_promtool if sys.argv[1] == "promtool" else check_prometheus
    with tempfile.TemporaryDirectory(prefix="rdzvd-metrics-") as scratch:
        rdzvd = Rdzvd(sys.argv[2], scratch)
        try:
            return check(rdzvd, sys.argv[3], scratch)
        finally:
            rdzvd.stop()


if __name__ == "__main__":
    sys.exit(main())
