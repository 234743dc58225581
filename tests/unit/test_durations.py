"""Every time option takes a duration: 30s, 5m, 1h, 1h30m, 500ms, or bare seconds (docs/cli.md, "Durations")."""

from __future__ import annotations

import argparse

import pytest

from controller import cli


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30.0),
        ("5m", 300.0),
        ("1h", 3600.0),
        ("1h30m", 5400.0),
        ("2m30s", 150.0),
        ("500ms", 0.5),
        ("1.5s", 1.5),
        ("10", 10.0),
        ("0.25", 0.25),
        ("0", 0.0),
        (" 2s ", 2.0),
    ],
)
def test_durations_parse_to_seconds(text, seconds):
    assert cli.duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "2x", "s", "5 m", "1h-5m", "-1", "-5s", "1d", "inf", "nan", "m5", "5mm"])
def test_bad_durations_are_refused_with_the_forms_that_work(text):
    with pytest.raises(argparse.ArgumentTypeError) as info:
        cli.duration(text)
    assert repr(text) in str(info.value)


OPTIONS = [
    (["watch", "-f", "x"], "--interval", "interval"),
    (["watch", "-f", "x"], "--lock-timeout", "lock_timeout"),
    (["apply", "-f", "x"], "--lock-timeout", "lock_timeout"),
    (["plan", "-f", "x"], "--gateway-timeout", "gateway_timeout"),
    (["apply", "-f", "x"], "--gateway-timeout", "gateway_timeout"),
    (["status"], "--gateway-timeout", "gateway_timeout"),
    (["export"], "--gateway-timeout", "gateway_timeout"),
]


@pytest.mark.parametrize(("argv", "flag", "dest"), OPTIONS)
def test_every_time_option_takes_durations(argv, flag, dest):
    parser = cli.build_parser()
    for text, seconds in (("2s", 2.0), ("5m", 300.0), ("1h", 3600.0), ("7", 7.0)):
        assert getattr(parser.parse_args([*argv, flag, text]), dest) == seconds


def test_every_float_option_of_the_parser_is_a_duration():
    """No time option is left behind: every option whose value is a number of seconds parses durations."""
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = []
    for name, verb in sub.choices.items():
        for action in verb._actions:
            if action.type is float or (action.metavar or "").upper() == "SECONDS":
                found.append(f"{name} {action.option_strings}")
            if action.type is cli.duration:
                assert action.metavar == "DURATION"
    assert found == []


def test_a_bad_duration_is_a_usage_error_naming_the_forms(capsys):
    assert cli.main(["watch", "-f", "x", "--interval", "2x"]) == 2
    err = capsys.readouterr().err
    assert "invalid duration '2x': use 30s, 5m, 1h, 1h30m, 500ms or seconds" in err
