"""How the bench's page writes its figures: seconds, rates, ratios, shares, processor time, dates, the machine."""


def seconds(value: float | None) -> str:
    return f"{value:.1f} s" if value is not None else "—"


def rate(value: int | None, unit: str) -> str:
    return f"{value:,} {unit}" if value else ""


def ratio(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.2f}x" if value < 10 else f"{value:,.0f}x" if value >= 100 else f"{value:.1f}x"


def percent(share: float) -> str:
    return f"{share * 100:g} %"


def count(found: dict | int) -> str:
    total = sum(found.values()) if isinstance(found, dict) else found
    return f"{total:,}"


def cpu(cpu: dict | None, cores: int | None) -> str:
    if not cpu:
        return ""
    of = f" of {cores}" if cores else ""
    return f"{cpu['cpuSeconds']} CPU-s ({cpu['busyCores']:.2f}{of}; Cassandra {cpu['cassandraCpuSeconds']} CPU-s)"


def when(date: str | None, time_of_day: str | None) -> str:
    if not date:
        return "undated"
    text = date.replace("T", " ").replace("Z", " UTC")
    return f"{text} ({time_of_day})" if time_of_day else text.strip()


def commit(figures: dict) -> str:
    if not figures.get("commit"):
        return ""
    changed = " with uncommitted changes" if figures.get("uncommittedChanges") else ""
    return f", commit `{figures['commit']}`{changed}"


def machine(record: dict) -> str:
    load = record.get("loadAverageAtStart")
    parts = [f"{record.get('cores')} cores", record.get("processor"), f"{record.get('memoryGiB')} GiB of memory"]
    text = ", ".join(part for part in parts if part)
    if load:
        text += f"; load average when the bench started {' / '.join(f'{value:.2f}' for value in load)} (1, 5, 15 min)"
    speeds = [record.get(f"speedReferenceSeconds{moment}") for moment in ("AtStart", "AtEnd")]
    if speeds[0] is not None:
        text += f"; speed reference (a fixed one-core loop, higher on a slower host) {speeds[0]:.2f} s at the start"
        text += f" and {speeds[1]:.2f} s at the end" if speeds[1] is not None else ""
    return text + "."
