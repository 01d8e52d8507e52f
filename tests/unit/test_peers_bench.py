"""The peers benchmark's arithmetic and what it gives promptfoo (bench/peers.py)."""

from __future__ import annotations

import yaml

from bench.peers import Timed, config_yaml, efficiency, parse_pipeline, per_case_ms


def test_the_config_holds_each_case_graded_equals_42():
    config = yaml.safe_load(config_yaml(3))
    assert [t["vars"]["q"] for t in config["tests"]] == ["case 0", "case 1", "case 2"]
    assert config["defaultTest"]["assert"] == [{"type": "equals", "value": "42"}]
    assert config["providers"] == ["file://provider.js"]


def test_cpu_per_case_leaves_the_start_up_out():
    # 1 case: 1.5 s of CPU (start-up); 501 cases: 4.5 s -> 3.0 s over 500 cases = 6 ms each
    assert per_case_ms(Timed(2.0, 1.5, ""), Timed(20.0, 4.5, ""), 501) == 6.0


def test_efficiency_is_the_floor_over_the_wall_less_the_start_up():
    # 600 cases x 200 ms / 6 lanes = 20 s floor; 23 s - 2 s = 21 s of run
    assert efficiency(600, 200, 6, Timed(2.0, 0, ""), Timed(23.0, 0, "")) == 20 / 21


def test_the_pipelines_figures_are_read_from_its_output():
    out = (
        "wall: 18.29 s   floor: 16.67 s   efficiency: 0.911\n"
        "CPU: 4.12 s over the process tree (moto's process 1.66 s), 8.2 ms per case attempt\n"
    )
    assert parse_pipeline(out) == (0.911, 8.2)
    eff, cpu = parse_pipeline("nothing")
    assert eff != eff and cpu != cpu
