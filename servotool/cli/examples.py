"""The Examples section of every command's help, and the terms its output uses (defined in docs/glossary.md).

One place for all of them, so that a test can check that every command has examples, that every example
parses as its command's options, and that every term named here is in the glossary. Devices are named by
the registry's URLs (help texts never name a family).
"""

from __future__ import annotations

from servotool.devices.registry import ARM, BUS, DEFAULT_ARM_URL, DEFAULT_BUS_URL, FAMILIES, sim_names

GLOSSARY = "docs/glossary.md"

_ARM_HOST = next((fam.examples[0] for fam in FAMILIES if fam.kind == ARM and fam.examples), "HOST")
_BUS_PORT = next((fam.examples[0] for fam in FAMILIES if fam.kind == BUS and fam.examples), "PORT")
_URLS = {"arm": DEFAULT_ARM_URL, "fast": f"{DEFAULT_ARM_URL}?clock=sim", "host": _ARM_HOST}
_URLS |= {"bus": DEFAULT_BUS_URL, "port": _BUS_PORT}

# command path -> ((what it does, the command line), ...); {arm}, {fast}, {host}, {bus}, {port} are URLs
EXAMPLES: dict[str, tuple[tuple[str, str], ...]] = {
    "": (
        ("measure the lag on the built-in simulated arm", "servotool lag"),
        ("the same in simulated time: seconds instead of minutes", "servotool lag --robot '{fast}'"),
        ("one command's options and examples", "servotool lag -h"),
    ),
    "lag": (
        ("two speeds, simulated arm and time", "servotool lag --robot '{fast}' --speeds 15,30"),
        ("the plan only (joint, range, speeds, duration): nothing opens", "servotool lag --dry-run"),
        ("J2 of a real arm, 10 deg out", "servotool lag --robot {host} --joint J2 --sweep 10 --plot"),
    ),
    "step": (
        ("shaped steps on the simulated arm", "servotool step --robot '{fast}'"),
        ("the plan only: nothing opens", "servotool step --size 5 --steps 2 --dry-run"),
        ("raw steps on the simulator, to see a runaway", "servotool step --robot '{fast}' --raw --size 20"),
    ),
    "analyze": (
        ("a folder: the combined results, then a line per file", "servotool analyze servotool-runs"),
        ("every figure of every file", "servotool -v analyze servotool-runs"),
        ("one recording, as JSON", "servotool analyze servotool-runs/run.csv --json"),
        ("a report and plots of a campaign folder", "servotool analyze results --report --plot"),
    ),
    "shape": (
        ("replay a raw step run through the jerk-limited shaper", "servotool shape run.csv --shaper otg"),
        ("with a plot and a tighter acceleration", "servotool shape run.csv --a-max 200 --plot"),
    ),
    "sweep": (
        ("the plan only (servos, directions, speed, duration)", "servotool sweep --dry-run"),
        ("one servo, one way, on the simulated arm", "servotool sweep --servo 2 --direction down"),
        ("a real bus, limits merged into a copy", "servotool sweep --bus {port} --limits arm-limits.yaml"),
    ),
    "record": (
        ("watch the simulated bus for a minute", "servotool record --duration 60"),
        ("a real bus, captures into a folder", "servotool record --bus {port} --out captures"),
        ("an arm instead of a bus", "servotool record --robot '{arm}' --duration 30"),
    ),
    "ports": (
        ("every serial port and what answers on it", "servotool ports"),
        ("list only, send nothing", "servotool ports --no-probe"),
        ("also probe a simulator's pty, as JSON", "servotool ports --port /dev/pts/5 --json"),
    ),
    "version": (("the versions", "servotool version"), ("as JSON", "servotool version --json")),
    "incidents": (
        ("every capture", "servotool incidents list"),
        ("the newest one", "servotool incidents show last"),
    ),
    "incidents list": (
        ("every capture in the default folder", "servotool incidents list"),
        ("another folder, as JSON", "servotool incidents list --out captures --json"),
    ),
    "incidents show": (
        ("the newest capture", "servotool incidents show last"),
        ("the second in the list, every row", "servotool incidents show 2 --wide"),
    ),
    "incidents plot": (
        ("a PNG of the newest capture", "servotool incidents plot last"),
        ("to a file of your own", "servotool incidents plot last --plot latch.png"),
    ),
    "servo": (
        ("read every servo of the simulated arm", "servotool servo read"),
        ("move to a named pose", "servotool servo move --to rest"),
    ),
    "servo read": (
        ("read once", "servotool servo read"),
        ("keep reading every second", "servotool servo read --watch --period-ms 1000"),
        ("a real bus, as JSON", "servotool servo read --bus {port} --json"),
    ),
    "servo move": (
        ("a named pose", "servotool servo move --to rest"),
        ("two servos by pulse, slowly", "servotool servo move --to 2=700,3=200 --speed 100"),
        ("the plan only: nothing moves", "servotool servo move --to fold --dry-run"),
    ),
    "servo hold": (("hold every servo where it is", "servotool servo hold"),),
    "servo relax": (
        ("torque off, once the arm rests in its tuck pose", "servotool servo relax"),
        ("with a wider tuck tolerance", "servotool servo relax --tolerance 40"),
    ),
    "servo forget": (("start the simulated arm from its start pose again", "servotool servo forget"),),
    "campaign": (
        ("the campaigns shipped with servotool", "servotool campaign list"),
        ("check a campaign file: nothing moves", "servotool campaign check my-campaign.yaml"),
    ),
    "campaign check": (
        ("check every run of a file", "servotool campaign check my-campaign.yaml"),
        ("against another device", "servotool campaign check my-campaign.yaml --robot '{fast}'"),
    ),
    "campaign list": (("the shipped campaigns", "servotool campaign list"),),
    "campaign run": (
        ("the plan only: nothing opens", "servotool campaign run my-campaign.yaml --dry-run"),
        ("run it on the simulator", "servotool campaign run my-campaign.yaml --robot '{fast}'"),
        ("go on where an interrupted run stopped", "servotool campaign run my-campaign.yaml --resume"),
    ),
    "sim": (("a simulator for another program, for a minute", "servotool sim {sim} --duration 60"),),
    "config": (
        ("the defaults in force", "servotool config show"),
        ("use a real arm by default", "servotool config set robot {host}"),
    ),
    "config show": (("the defaults and where each comes from", "servotool config show"),),
    "config path": (("where the config file is", "servotool config path"),),
    "config set": (
        ("use a real arm by default", "servotool config set robot {host}"),
        ("the default output folder", "servotool config set out ~/servotool-runs"),
    ),
    "config unset": (("back to the built-in default arm", "servotool config unset robot"),),
}

# command path -> the glossary terms its output uses
TERMS: dict[str, tuple[str, ...]] = {
    "lag": (
        "L",
        "pass",
        "cruise delta",
        "midpoint lag",
        "host view",
        "guard-view lag",
        "frame age",
        "shaper trail",
    ),
    "step": ("raw step", "shaped step", "runaway", "rejects", "guard margin", "frame age"),
    "analyze": ("L", "pass", "cruise", "runaway", "stall", "SIMULATED"),
    "shape": ("shaped step", "shaper trail"),
    "sweep": ("pulse", "stored limit", "stall", "inside"),
    "record": ("rings", "latch", "lead-up", "tail", "silent servo"),
    "incidents": ("capture", "latch", "lead-up", "tail-complete"),
    "incidents list": ("capture", "latch", "lead-up", "tail", "tail-complete"),
    "incidents show": ("capture", "latch", "lead-up", "tail", "tail-complete", "times before and after"),
    "servo read": ("pulse", "silent servo", "stored limit"),
    "servo move": ("pulse", "stored limit"),
    "campaign run": ("SIMULATED",),
}


def _sim_examples(name: str) -> tuple[tuple[str, str], ...]:
    fam = next(f for f in FAMILIES if f.name == name)
    profile = next(iter(sim_names(fam)), "")
    return (
        ("serve it until Ctrl-C and print its address", f"servotool sim {name}"),
        ("one profile, a minute, JSON", f"servotool sim {name} --profile {profile} --duration 60 --json"),
    )


def examples_of(path: str) -> tuple[tuple[str, str], ...]:
    """The examples of the command at `path` (its words after `servotool`), URLs filled in; () for none."""
    words = path.split()
    if len(words) == 2 and words[0] == "sim" and any(f.name == words[1] for f in FAMILIES):
        return _sim_examples(words[1])
    sim = next((f.name for f in FAMILIES if f.serve is not None), "NAME")
    return tuple((what, line.format(**_URLS, sim=sim)) for what, line in EXAMPLES.get(path, ()))


def epilog_of(path: str) -> str | None:
    """The help's closing text of the command at `path`: its Examples and the terms its output uses, as rich
    markup whose lines are kept (each example's command line on a line of its own, ready to copy)."""
    from rich.markup import escape

    lines = []
    examples = examples_of(path)
    if examples:
        lines.append("[b]Examples[/b]")
        for what, line in examples:
            lines += [f"  [dim]# {escape(what)}[/dim]", f"  {escape(line)}"]
    terms = TERMS.get(path)
    if terms:
        lines.append(f"Terms ({escape(', '.join(terms))}): see {GLOSSARY}.")
    elif lines:  # the glossary named on every command (a last line also keeps rich from dedenting the rest)
        lines.append(f"Terms: see {GLOSSARY}.")
    return "\n".join(lines) or None
