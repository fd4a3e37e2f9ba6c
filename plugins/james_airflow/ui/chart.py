"""The trend of one keyspace and target over its last runs, drawn by the server as inline SVG: found, fixed and
remaining per run, a line each (a run without a figure leaves a gap). Nothing is fetched by the page, and no
plotting library is needed (matplotlib stays the command line's optional extra)."""

from html import escape

from james_consistency.report.history import RunEntry

WIDTH, HEIGHT = 360, 140
LEFT, RIGHT, TOP, BOTTOM = 36, 8, 18, 22
SERIES = (("found", "#c0392b"), ("fixed", "#2471a3"), ("remaining", "#d68910"))


def trend_svg(runs: list[RunEntry], title: str) -> str:
    """The SVG markup of the runs' found, fixed and remaining (oldest first)."""
    values = [getattr(run, name) for run in runs for name, _ in SERIES]
    top = max([value for value in values if value is not None] + [1])
    inner_width, inner_height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = inner_width / max(len(runs) - 1, 1)

    def x(index: int) -> float:
        return LEFT + (index * step if len(runs) > 1 else inner_width / 2)

    def y(value: int) -> float:
        return TOP + inner_height * (1 - value / top)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="trend" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
        f'height="{HEIGHT}" role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>',
        f'<line x1="{LEFT}" y1="{TOP + inner_height}" x2="{WIDTH - RIGHT}" y2="{TOP + inner_height}" stroke="#999"/>',
        f'<text x="{LEFT - 4}" y="{TOP + 4}" text-anchor="end" font-size="10">{top}</text>',
        f'<text x="{LEFT - 4}" y="{TOP + inner_height}" text-anchor="end" font-size="10">0</text>',
    ]
    for index, (name, colour) in enumerate(SERIES):
        parts.append(f'<text x="{LEFT + index * 90}" y="11" font-size="10" fill="{colour}">&#9632; {name}</text>')
        segments, current = [], []
        for position, run in enumerate(runs):
            value = getattr(run, name)
            if value is None:  # a gap in the line
                if current:
                    segments.append(current)
                current = []
                continue
            current.append(f"{x(position):.1f},{y(value):.1f}")
            parts.append(
                f'<circle cx="{x(position):.1f}" cy="{y(value):.1f}" r="2.5" fill="{colour}" '
                f'data-series="{name}" data-value="{value}"><title>{name} {value}</title></circle>'
            )
        segments += [current] if current else []
        for points in segments:
            if len(points) > 1:
                parts.append(
                    f'<polyline points="{" ".join(points)}" fill="none" stroke="{colour}" stroke-width="1.5"/>'
                )
    if runs:
        first, last = runs[0].when, runs[-1].when
        parts.append(f'<text x="{LEFT}" y="{HEIGHT - 6}" font-size="10">{first:%Y-%m-%d}</text>')
        if len(runs) > 1:
            parts.append(
                f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 6}" font-size="10" text-anchor="end">{last:%Y-%m-%d}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)
