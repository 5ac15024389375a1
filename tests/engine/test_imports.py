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


def test_the_personal_data_detector_does_not_import_django():
    code = (
        "import sys, privacy.detect.pii, compaction.engine.fact_index; "
        "assert 'django' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_engine_does_not_import_the_anthropic_sdk_until_a_model_is_called():
    code = (
        "import sys, compaction.engine.replay, compaction.engine.evals, "
        "compaction.engine.summarizers, compaction.engine.tokens, compaction.engine.strategies, "
        "compaction.engine.claude_code; assert 'anthropic' not in sys.modules; "
        "assert 'compaction.engine.anthropic' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_naming_an_anthropic_summarizer_loads_the_adapter_but_not_the_sdk_until_it_is_called():
    code = (
        "import sys; from compaction.engine.summarizer_choice import summarizer_from_name; "
        "s = summarizer_from_name('anthropic', api_key='k'); "
        "assert 'compaction.engine.anthropic' in sys.modules; "
        "assert 'anthropic' not in sys.modules; s.client(); assert 'anthropic' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_the_facade_names_only_what_it_exports_and_keeps_submodules_reachable():
    import compaction.engine as engine
    from compaction.engine import replay

    assert sorted(engine.__all__) == sorted(set(engine.__all__))
    assert all(hasattr(engine, name) for name in engine.__all__)
    assert callable(replay.replay)  # the submodule, not shadowed by a re-exported function
