"""``ppviz.sweep``: rows equal to ``simulate``'s figures, refusals as rows, errors up front, and the
same rows from joblib's processes and from a real two-worker Dask cluster."""

import math

import distributed
import pandas as pd
import pytest

import ppviz
from ppviz import Config, ConfigError, simulate

GRID = {"schedule": ["1f1b", "zb-h1", "dualpipe", "zb-v", "interleaved-1f1b"], "devices": [2, 3, 4],
        "microbatches": [4, 6, 8], "comm": [0.0, 0.25], "w": [0.5, 1.0]}


def test_rows_are_simulates_figures_and_refusals_are_rows():
    df = ppviz.sweep(GRID, n_jobs=1, progress=False)
    assert len(df) == 5 * 3 * 3 * 2 * 2
    assert list(df.columns[:5]) == list(GRID)
    # the product's order: the last field varies fastest
    assert list(df.w[:4]) == [0.5, 1.0, 0.5, 1.0] and list(df.comm[:4]) == [0.0, 0.0, 0.25, 0.25]
    refused = df[df.refusal.notna()]
    # DualPipe needs an even p and m >= 2p (among others); each refusal is the Config's own message
    assert "dualpipe" in set(refused.schedule) and len(refused) < len(df)
    for row in refused.itertuples():
        with pytest.raises(ppviz.ScheduleConstraintError) as err:
            Config(schedule=row.schedule, devices=row.devices, microbatches=row.microbatches, comm=row.comm, w=row.w)
        assert row.refusal == str(err.value)
        assert math.isnan(row.makespan)
    for row in df[df.refusal.isna()].sample(20, random_state=0).itertuples():
        res = simulate(Config(schedule=row.schedule, devices=row.devices, microbatches=row.microbatches,
                              comm=row.comm, w=row.w))
        assert (row.makespan, row.bubble_fraction, row.bubble_rate, row.ideal) == \
            (res.makespan, res.bubble_fraction, res.bubble_rate, res.ideal)
        assert (row.peak_activation, row.peak_memory) == (res.peak_activation.max(), res.peak_memory.max())


def test_a_list_of_configs_and_a_base():
    configs = [Config(schedule="zb-h1", devices=4, microbatches=m, f=1.5, label=f"m{m}") for m in (4, 8)]
    df = ppviz.sweep(configs, n_jobs=1, progress=False)
    assert list(df.columns[:4]) == ["schedule", "devices", "microbatches", "stages_per_device"]
    assert list(df.label) == ["m4", "m8"] and list(df.f) == [1.5, 1.5]
    assert list(df.makespan) == [simulate(c).makespan for c in configs]
    base = Config(devices=4, f=2.0, b=1.0, w=0.5, params=3.0)
    df = ppviz.sweep({"microbatches": [4, 8]}, base=base, n_jobs=1, progress=False)
    assert list(df.makespan) == [simulate(base.replace(microbatches=m)).makespan for m in (4, 8)]
    assert list(df.peak_memory) == [simulate(base.replace(microbatches=m)).peak_memory.max() for m in (4, 8)]


def test_the_grid_is_checked_before_anything_runs():
    with pytest.raises(ConfigError, match=r"grid\['microbatch'\].*did you mean 'microbatches'"):
        ppviz.sweep({"microbatch": [4]}, progress=False)
    with pytest.raises(ConfigError, match=r"grid\['devices'\]=0.*no config accepts it"):
        ppviz.sweep({"devices": [4, 0]}, progress=False)
    with pytest.raises(ConfigError, match=r"grid\['f'\].*at least one value"):
        ppviz.sweep({"f": []}, progress=False)
    with pytest.raises(ConfigError, match="too many combinations"):
        ppviz.sweep({"f": list(range(1, 4000)), "b": list(range(1, 4000))}, progress=False)
    for bad in ("1f1b", {}, [], [Config(), "zb-h1"], 3):
        with pytest.raises(ConfigError):
            ppviz.sweep(bad, progress=False)
    with pytest.raises(ConfigError, match="n_jobs"):
        ppviz.sweep([Config()], n_jobs=0)
    with pytest.raises(ConfigError, match="chunk_size"):
        ppviz.sweep([Config()], chunk_size=0)
    with pytest.raises(ConfigError, match="client"):
        ppviz.sweep([Config()], client="tcp://localhost:8786")


def test_fields_that_only_make_sense_together_are_checked_together():
    # a topology needs comm_bytes and a unit, offload a host link: each value alone is refused,
    # but every combination of these grids is a valid config
    grid = {"devices": [4], "microbatches": [8], "time_unit": ["ms"], "topology": ["dgx-h100"], "comm_bytes": [1e8]}
    df = ppviz.sweep(grid, n_jobs=1, progress=False)
    cfg = Config(devices=4, microbatches=8, time_unit="ms", topology="dgx-h100", comm_bytes=1e8)
    assert list(df.makespan) == [simulate(cfg).makespan]
    link = ppviz.Link(1e-3, bandwidth=1e3)
    offloads = [ppviz.Offload(share, link=link) for share in (0.25, 0.5)]
    df = ppviz.sweep({"devices": [4], "offload": offloads}, n_jobs=1, progress=False)
    assert list(df.makespan) == [simulate(Config(offload=o)).makespan for o in offloads]
    df = ppviz.sweep({"topology": ["dgx-h100"], "comm_bytes": [1e8]}, base=Config(time_unit="ms"), n_jobs=1,
                     progress=False)
    assert list(df.makespan) == [simulate(cfg).makespan]
    # a value no combination accepts is still refused up front, named once, and blamed on its own field
    with pytest.raises(ConfigError) as error:
        ppviz.sweep({"devices": [4], "topology": ["dgx-h101"], "comm_bytes": [1e8]}, base=Config(time_unit="ms"),
                    progress=False)
    assert str(error.value).startswith("grid['topology']='dgx-h101'")
    assert str(error.value).count("use one of dgx-h100") == 1
    with pytest.raises(ConfigError, match=r"grid\['topology'\].*set time_unit"):
        ppviz.sweep({"topology": ["dgx-h100"], "comm_bytes": [1e8]}, progress=False)


def test_a_grid_of_schedules_takes_each_schedules_own_v():
    # before, 1f1b's v = 1 was carried into every schedule of the grid and zb-v refused it
    base = Config("1f1b", devices=4, microbatches=8)
    schedules = ["1f1b", "zb-v", "interleaved-1f1b"]
    df = ppviz.sweep({"schedule": schedules}, base=base, n_jobs=1, progress=False)
    assert df.refusal.isna().all()
    assert list(df.makespan) == [simulate(Config(s, devices=4, microbatches=8)).makespan for s in schedules]
    # a v the user set away from the default is theirs: a schedule that cannot take it refuses
    df = ppviz.sweep({"schedule": ["interleaved-1f1b", "zb-v"]}, base=Config("interleaved-1f1b", stages_per_device=3),
                     n_jobs=1, progress=False)
    assert df.refusal.isna().tolist() == [True, False]
    assert df.refusal[1].startswith("stages_per_device=3")


def test_progress_is_a_tqdm_bar(capsys):
    ppviz.sweep({"microbatches": [4, 8, 12]}, n_jobs=1)
    err = capsys.readouterr().err
    assert "ppviz.sweep" in err and "3/3" in err


def test_joblib_and_a_real_dask_cluster_give_identical_rows():
    local = ppviz.sweep(GRID, n_jobs=2, chunk_size=16, progress=False)
    serial = ppviz.sweep(GRID, n_jobs=1, progress=False)
    pd.testing.assert_frame_equal(local, serial)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster, distributed.Client(cluster) as client:
        on_dask = ppviz.sweep(GRID, client=client, chunk_size=16, progress=False)
        # both workers took chunks: the cluster ran it, not this process
        ran_on = client.run(lambda: __import__("ppviz.core.metrics").core.metrics._plan_of_shape.cache_info().currsize)
    pd.testing.assert_frame_equal(on_dask, local)
    assert len(ran_on) == 2 and all(size > 0 for size in ran_on.values())


def test_import_ppviz_loads_none_of_the_sweeps_libraries():
    import subprocess
    import sys

    code = ("import sys, ppviz; ppviz.search; print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('pandas', 'joblib', 'tqdm', 'dask', 'distributed', 'scipy', 'altair')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
    code = "import sys, ppviz; ppviz.sweep; print('joblib' in sys.modules, 'pandas' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() \
        == "False False"  # they load when a sweep runs
