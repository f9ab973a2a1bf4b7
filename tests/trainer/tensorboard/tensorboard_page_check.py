"""Checks a TensorBoard page as a browser rendered it (Chromium's --dump-dom, Time Series
dashboard with SVG charts): the scalar card titled TAG is there and its chart draws a line
through POINTS points. Exit status 1 with the reason otherwise."""
import re
import sys


def main() -> int:
    if len(sys.argv) != 4:
        sys.exit("usage: tensorboard_page_check.py DOM_FILE TAG POINTS")
    dom, tag, points = open(sys.argv[1], encoding="utf-8").read(), sys.argv[2], int(sys.argv[3])
    titled = [m.start() for m in re.finditer(r'<tb-truncated-path[^>]*title="' + re.escape(tag) + '"', dom)]
    if not titled:
        print(f"no scalar card titled {tag!r} on the page")
        return 1
    card = dom[titled[0]:dom.find("</scalar-card>", titled[0])]
    chart = card[card.find("<line-chart"):card.find("</line-chart>")]
    lines = re.findall(r'<path d="(M[^"]*)"', chart)
    drawn = [d.count("L") + 1 for d in lines]
    if points not in drawn:
        print(f"the {tag!r} chart draws no line through {points} points (lines with {drawn} points)")
        return 1
    print(f"the {tag!r} card shows a line through {points} points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
