import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_engine_does_not_import_django():
    code = (
        "import sys, compaction.engine; import compaction.engine.replay, "
        "compaction.engine.strategies; assert 'django' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_engine_does_not_import_the_anthropic_sdk_until_a_model_is_called():
    code = (
        "import sys, compaction.engine.replay, compaction.engine.evals, "
        "compaction.engine.claude_code; assert 'anthropic' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_the_facade_names_only_what_it_exports_and_keeps_submodules_reachable():
    import compaction.engine as engine
    from compaction.engine import replay

    assert sorted(engine.__all__) == sorted(set(engine.__all__))
    assert all(hasattr(engine, name) for name in engine.__all__)
    assert callable(replay.replay)  # the submodule, not shadowed by a re-exported function
