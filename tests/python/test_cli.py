"""The `wayside` command line, run as a subprocess: run / scenarios / show,
and hostile inputs, which must fail with exit code 2 and one clear message
(naming the key or value and what is allowed), never a traceback or a Rust
panic. Also a hypothesis fuzz of the scenario resolver."""

from __future__ import annotations

import copy
import json
import re
import tomllib
from pathlib import Path

import pytest
import tomli_w
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import wayside
from wayside import _native
from wayside.scenario import scenario_text


def assert_clean(p) -> None:
    for stream in (p.stdout, p.stderr):
        assert "Traceback" not in stream, p.stderr
        assert "panicked" not in stream, p.stderr
        assert "PanicException" not in stream, p.stderr


# ---------------------------------------------------------------- happy paths


def test_run_writes_run_directory(cli, tmp_path):
    out = tmp_path / "sat"
    p = cli("run", "saturation", "--out", out)
    assert p.returncode == 0, p.stderr
    assert_clean(p)
    for name in ("scenario.toml", "frames.parquet", "mac.parquet", "per_second.parquet", "summary.json"):
        assert (out / name).is_file(), name
        assert (out / name).stat().st_size > 0, name
    scenario = tomllib.loads((out / "scenario.toml").read_text(encoding="utf-8"))
    assert scenario == wayside.load_scenario("saturation")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["nodes"] == ["sender", "receiver"]
    receiver = next(r for r in summary["per_node"] if r["node"] == "receiver")
    assert receiver["goodput_in_mbps"] == pytest.approx(30.5, rel=0.03)
    assert str(out) in p.stdout.replace("\n", "")
    # The summary table names both nodes.
    assert "sender" in p.stdout and "receiver" in p.stdout


def test_run_applies_overrides_and_seed(cli, tmp_path):
    out = tmp_path / "o"
    p = cli("run", "saturation", "--seed", "3", "--set", 'mac.rate="11 Mbps"', "--set", 'duration="1 s"', "--out", out, "-q")
    assert p.returncode == 0, p.stderr
    assert Path(p.stdout.strip()) == out
    scenario = tomllib.loads((out / "scenario.toml").read_text(encoding="utf-8"))
    assert scenario["mac"]["rate"] == "11 Mbps"
    assert scenario["duration"] == "1 s"


def test_scenarios_lists_builtins(cli):
    p = cli("scenarios")
    assert p.returncode == 0, p.stderr
    for name in ("saturation", "range", "drive-by"):
        assert name in p.stdout
    assert "One saturated 802.11g sender" in p.stdout


def test_show_prints_resolved_toml(cli):
    # 11 Mbps is a DSSS rate, which 802.11g includes: valid.
    p = cli("show", "saturation", "--set", 'mac.rate="11 Mbps"')
    assert p.returncode == 0, p.stderr
    shown = tomllib.loads(p.stdout)
    assert shown == wayside.load_scenario("saturation", ['mac.rate="11 Mbps"'])
    assert shown["mac"]["rate"] == "11 Mbps"


def test_show_resolved_writes_every_default_and_runs_the_same(cli, tmp_path):
    corridor = Path(__file__).parent / "data" / "corridor.toml"
    roam = 'management.roaming="bgscan-simple"'
    p = cli("show", str(corridor), "--resolved", "--set", roam)
    assert p.returncode == 0, p.stderr
    shown = tomllib.loads(p.stdout)
    # The APs take [mac]'s, madwifi's SampleRate; the cars roam with bgscan,
    # as mac80211 clients, and run its Minstrel.
    assert shown["mac"]["rate_control"] == {"algorithm": "samplerate"}
    cars = [n for n in shown["node"] if n["name"].startswith("car")]
    assert len(cars) == 8 and all(n["rate_control"] == {"algorithm": "minstrel"} for n in cars)
    assert shown["start"] == "1970-01-01T00:00:00Z"
    assert shown["management"]["beacon_interval"] == "0.1 s"
    assert cars[0]["mobility"]["speed"] == "50 km/h"  # as the user wrote it
    assert _native.resolve_defaults(p.stdout) == p.stdout
    (tmp_path / "resolved.toml").write_text(p.stdout, encoding="utf-8")
    short = ['duration="8 s"']
    a = wayside.run(str(corridor), seed=1, overrides=[*short, roam])
    b = wayside.run(str(tmp_path / "resolved.toml"), seed=1, overrides=short)
    from wayside.traces import table

    assert a.frames.num_rows > 1000 and table(a, "frames").equals(table(b, "frames"))


def test_show_output_is_verbatim_toml(cli):
    # Long values and text that looks like console markup or emoji codes must
    # come out unchanged, so `wayside show X > file.toml` can be run again.
    description = "word-" * 40 + " :smile: [bold]x[/bold] [/]"
    p = cli("show", "saturation", "--set", f"description={json.dumps(description)}")
    assert p.returncode == 0, p.stderr
    assert tomllib.loads(p.stdout)["description"] == description


def test_show_rejects_dsss_rate_for_802_11a(cli):
    p = cli("show", "saturation", "--set", 'radio.standard="802.11a"', "--set", 'mac.rate="11 Mbps"')
    assert p.returncode == 2
    assert_clean(p)
    for word in ("mac.rate", "11 Mbps", "802.11a", "6, 9, 12"):
        assert word in p.stderr


def test_help(cli):
    p = cli("--help")
    assert p.returncode == 0
    for command in ("run", "scenarios", "show"):
        assert command in p.stdout


# ---------------------------------------------------------------- hostile inputs

SATURATION = scenario_text("saturation")


def _file(name: str, content: str | bytes):
    def make(tmp: Path) -> str:
        path = tmp / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return str(path)

    return make


def _replace(old: str, new: str) -> str:
    assert SATURATION.count(old) == 1, old
    return SATURATION.replace(old, new)


# (id, command line with callables for temp files, words the message must contain)
HOSTILE = [
    ("unknown-key", ["show", _file("unknown.toml", _replace("standard =", "standrd ="))], ["standrd", "standard"]),
    ("wrong-type", ["show", _file("type.toml", _replace('duration = "10 s"', "duration = 5"))], ["duration", "5", "unit", "ms"]),
    ("wrong-type-set", ["show", "saturation", "--set", 'node.0.count="many"'], ["node.sender.count", "many"]),
    ("bad-unit", ["show", "drive-by", "--set", 'node.car.mobility.speed="80 furlongs"'], ["furlongs", "km/h", "speed"]),
    ("negative-distance", ["show", "saturation", "--set", 'node.sender.antenna_height="-3 m"'], ["antenna_height", "-3 m", "0.01 m"]),
    ("tx-power-out-of-range", ["show", "saturation", "--set", 'node.sender.tx_power="-100 dBm"'], ["tx_power", "-100 dBm", "-30 dBm"]),
    ("unknown-rate", ["run", "saturation", "--set", 'mac.rate="13 Mbps"'], ["mac.rate", "13 Mbps", "54"]),
    ("unknown-standard", ["show", "saturation", "--set", 'radio.standard="802.11z"'], ["802.11z", "802.11b", "802.11g"]),
    ("absurd-node-count", ["run", _file("count.toml", _replace('name = "receiver"', 'name = "receiver"\ncount = 100000000'))], ["node", "10000"]),
    ("unknown-traffic-node", ["show", "saturation", "--set", 'traffic.0.to="nobody"'], ["traffic[0].to", "nobody", "receiver"]),
    ("unknown-traffic-source", ["run", "saturation", "--set", 'traffic.0.from="nobody"'], ["traffic[0].from", "nobody", "sender"]),
    ("unknown-top-level-key", ["show", "saturation", "--set", "foo.bar=1"], ["foo", "duration", "radio"]),
    ("missing-file", ["run", "does-not-exist.toml"], ["does-not-exist.toml", "saturation"]),
    ("not-toml", ["show", _file("notoml.toml", "this is [[ not toml\n")], ["TOML"]),
    ("binary", ["show", _file("binary.toml", b"\xff\xfe\x00\x01\x89PNG\x00\x00garbage")], ["binary.toml", "UTF-8"]),
    ("empty-file", ["run", _file("empty.toml", "")], ["duration"]),
    ("file-name-too-long", ["show", "x" * 5000 + ".toml"], ["xxxx"]),
    ("negative-seed", ["run", "saturation", "--seed", "-1"], ["--seed"]),
    ("seed-too-large", ["run", "saturation", "--seed", str(2**64)], ["--seed"]),
    ("negative-run", ["run", "saturation", "--run", "-1"], ["--run"]),
    ("set-without-equals", ["show", "saturation", "--set", "nokeyvalue"], ["nokeyvalue", "KEY=VALUE"]),
    ("set-empty-key", ["show", "saturation", "--set", "=1"], ["=1"]),
    ("set-index-out-of-range", ["show", "saturation", "--set", 'traffic.3.payload="1 B"'], ["traffic", "3", "1 entries"]),
    # The override names a node that does not exist: say which nodes do.
    ("set-unknown-node", ["show", "saturation", "--set", 'node.nosuchnode.tx_power="1 dBm"'], ["nosuchnode", "sender", "receiver"]),
    # The message must show the value given, not a clamped one.
    ("negative-duration", ["show", "saturation", "--set", 'duration="-1 s"'], ["duration", "-1 s"]),
    # Values that look like console markup are printed, not interpreted.
    ("markup-in-value", ["show", "saturation", "--set", 'traffic.0.to="[/x] [red]y"'], ["[/x] [red]y", "receiver"]),
    ("out-is-a-file", ["run", "saturation", "--set", 'duration="10 ms"', "--out", _file("plain-file", "x")], ["plain-file"]),
]


@pytest.mark.parametrize("args, words", [pytest.param(a, w, id=i) for i, a, w in HOSTILE])
def test_hostile_input_fails_cleanly(cli, tmp_path, args, words):
    argv = [a(tmp_path) if callable(a) else a for a in args]
    p = cli(*argv, cwd=tmp_path)
    assert p.returncode == 2, f"exit {p.returncode}\nstdout: {p.stdout[-2000:]}\nstderr: {p.stderr[-2000:]}"
    assert_clean(p)
    message = " ".join(p.stderr.split())  # undo any wrapping
    assert message, "no message on stderr"
    for w in words:
        assert w in message, f"{w!r} not in message: {message[-1500:]}"


# ---------------------------------------------------------------- validation gaps (API)


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param(["node.sender.position=[1, 2, 3]"], id="position-with-3-coordinates"),
        pytest.param(["node.0.count=2", "node.0.spacing=[nan, 0]", 'traffic.0.from="sender-0"'], id="spacing-nan"),
        pytest.param(["node.0.count=2", "node.0.spacing=[1e300, 0]", 'traffic.0.from="sender-0"'], id="spacing-huge"),
        pytest.param(
            ['node.receiver.mobility={model="polyline", points=[[nan, 0], [5, 0]], speed="1 m/s"}'], id="polyline-point-nan"
        ),
        pytest.param(
            ['node.receiver.mobility={model="waypoints", waypoints=[{position=[inf, 0], speed="1 m/s"}]}'],
            id="waypoint-inf",
        ),
    ],
)
def test_coordinates_are_validated(overrides):
    # `position` must be two finite coordinates within +-10000 km; every
    # other coordinate in a scenario must be held to the same rule rather
    # than silently dropped or run with as NaN.
    with pytest.raises(wayside.ScenarioError):
        _native.resolve(SATURATION, overrides)


# ---------------------------------------------------------------- fuzzing the resolver


def _resolve_or_scenario_error(text: str, overrides: list[str] | None = None) -> None:
    try:
        out = _native.resolve(text, overrides or [])
    except wayside.ScenarioError as e:
        assert str(e), "empty error message"
        return
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # a Rust panic surfaces as PanicException(BaseException)
        raise AssertionError(f"resolve raised {type(e).__module__}.{type(e).__name__}: {e}") from e
    assert isinstance(out, str)
    tomllib.loads(out)  # what it returns is TOML


KEYS = [
    "name", "description", "duration", "seed", "environment", "radio", "mac", "node", "traffic",
    "path_loss", "noise_floor", "shadowing_sigma", "shadowing_decorrelation", "fading", "rician_k",
    "path_loss_exponent", "reference_distance", "standard", "channel", "b_compatible", "preamble",
    "cca_threshold", "capture_margin", "implementation_loss", "rate", "retry_chain", "tries",
    "queue_limit", "short_retry_limit", "long_retry_limit", "rts_threshold", "position", "tx_power",
    "antenna_gain", "antenna_height", "count", "spacing", "mobility", "model", "speed", "heading",
    "depart", "points", "waypoints", "pause", "kind", "from", "to", "payload", "interval", "rates",
    "start", "stop",
]
UNITS = ["", "s", "ms", "us", "ns", "min", "h", "dBm", "mW", "W", "dB", "dBi", "m", "km", "cm", "m/s", "km/h",
         "mph", "Mbps", "kbps", "B", "kB", "KiB", "MB", "furlongs", "Hz"]
WORDS = ["802.11g", "802.11b", "802.11a", "802.11p", "two-ray", "free-space", "log-distance", "rician",
         "rayleigh", "none", "off", "long", "short", "line", "static", "polyline", "waypoints", "saturate",
         "cbr", "sounder", "broadcast", "sender", "receiver", "ap", "car"]

numbers = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, -1, 2, 6, 15, 54, 10_000, 10_001, 2**32, 2**63 - 1]),
)
quantities = st.builds(
    lambda n, u, sp: f"{n}{' ' if sp else ''}{u}".strip(),
    st.one_of(st.integers(-(10**12), 10**12), st.floats(allow_nan=True, allow_infinity=True)),
    st.sampled_from(UNITS),
    st.booleans(),
)
scalars = st.one_of(numbers, quantities, st.sampled_from(WORDS), st.text(max_size=20), st.booleans())
keys = st.one_of(st.sampled_from(KEYS), st.text(min_size=1, max_size=10))
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(keys, children, max_size=5),
    ),
    max_leaves=12,
)
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.text(max_size=400))
def test_fuzz_resolve_random_text(text):
    _resolve_or_scenario_error(text)


@FUZZ
@given(st.dictionaries(keys, values, max_size=8))
def test_fuzz_resolve_random_toml_dicts(doc):
    _resolve_or_scenario_error(tomli_w.dumps(doc))


def _mutate(doc, data, draw_value) -> dict:
    doc = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from([p for p in _paths(doc) if p[0] not in ("name", "description")]))
        target = doc
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = draw_value(target[path[-1]])
    return doc


def _paths(doc, prefix=()):
    """Every key path in a parsed scenario, with list indices."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield (*prefix, k)
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield (*prefix, i)
            yield from _paths(v, (*prefix, i))


BUILTIN_DOCS = {name: wayside.load_scenario(name) for name in ("saturation", "range", "drive-by")}


@FUZZ
@given(st.sampled_from(sorted(BUILTIN_DOCS)), st.data())
def test_fuzz_resolve_mutated_builtins(name, data):
    # Valid scenarios with a few values replaced by anything: reaches the
    # deserializer deep inside every section.
    doc = _mutate(BUILTIN_DOCS[name], data, lambda _old: data.draw(values))
    _resolve_or_scenario_error(tomli_w.dumps(doc))


MUTANT_NUMBERS = st.one_of(
    st.floats(-1e6, 1e6),
    st.sampled_from([0, 1, 2, -1, 1e-9, -0.001, 1e9, 2304, 2305, 10_000]),
    st.integers(-5, 100),
)
MUTANT_WORDS = st.sampled_from(
    ["802.11b", "802.11a", "802.11p", "802.11g", "rayleigh", "rician", "none", "free-space", "log-distance",
     "two-ray", "broadcast", "ap", "car", "sender", "receiver", "sounder", "cbr", "saturate"]
)


def _like(old, data):
    """A new value of the same shape as `old`: same unit, other number."""
    if isinstance(old, bool):
        return data.draw(st.booleans())
    if isinstance(old, (int, float)):
        return data.draw(MUTANT_NUMBERS)
    if isinstance(old, str):
        m = re.fullmatch(r"[-+0-9.e]+\s*(.*)", old)
        return f"{data.draw(MUTANT_NUMBERS)} {m.group(1)}" if m else data.draw(MUTANT_WORDS)
    if isinstance(old, list):
        return [_like(x, data) for x in old]
    return old


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(BUILTIN_DOCS)), st.data())
def test_fuzz_run_mutated_builtins(name, data):
    # Plausible scenarios (numbers and names changed, units kept) must run
    # or be refused with a ScenarioError; a run's trace is in time order.
    doc = _mutate(BUILTIN_DOCS[name], data, lambda old: _like(old, data))
    doc["duration"] = "20 ms"
    seed = data.draw(st.integers(0, 2**64 - 1))
    try:
        result = wayside.run(doc, seed=seed, run=data.draw(st.integers(0, 3)))
    except wayside.ScenarioError:
        event("refused")
        return
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:
        raise AssertionError(f"run raised {type(e).__module__}.{type(e).__name__}: {e}") from e
    event("ran")
    for table in (result.frames, result.mac):
        t = table["time_ns"].to_pylist()
        assert t == sorted(t)
        assert not t or t[-1] <= 20_000_000


override_strings = st.one_of(
    st.text(max_size=60),
    st.builds(
        lambda ks, v: ".".join(ks) + "=" + v,
        st.lists(st.one_of(st.sampled_from(KEYS), st.sampled_from(["0", "1", "7", "sender", "receiver"])), min_size=1, max_size=4),
        st.one_of(quantities.map(json.dumps), st.text(max_size=20), numbers.map(str)),
    ),
)


@FUZZ
@given(st.lists(override_strings, max_size=4))
def test_fuzz_resolve_overrides(overrides):
    _resolve_or_scenario_error(SATURATION, overrides)
