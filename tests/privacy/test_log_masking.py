"""Logs carry no personal data in clear, even when an exception quotes trace content."""

from __future__ import annotations

import io
import logging

from sessions.log_masking import MaskPersonalData


def _logger(stream: io.StringIO) -> logging.Logger:
    logger = logging.getLogger("tests.privacy.masking")
    logger.handlers.clear()
    handler = logging.StreamHandler(stream)
    handler.addFilter(MaskPersonalData())
    logger.addHandler(handler)
    logger.propagate = False
    return logger


def test_a_log_message_and_its_arguments_are_masked() -> None:
    stream = io.StringIO()
    _logger(stream).warning("customer %s wrote from %s", "530.582.439-79", "ana@example.com")
    line = stream.getvalue()
    assert "530.582.439-79" not in line
    assert "ana@example.com" not in line
    assert "[cpf ***.***.***-79]" in line
    assert "[email a***@***.com]" in line


def test_an_exception_traceback_is_masked() -> None:
    stream = io.StringIO()
    try:
        raise ValueError("messages[2].content: bad block 'CPF 530.582.439-79'")
    except ValueError:
        _logger(stream).exception("analysis of session %s failed", 7)
    out = stream.getvalue()
    assert "analysis of session 7 failed" in out
    assert "ValueError" in out
    assert "530.582.439-79" not in out


def test_the_console_handler_is_configured_with_the_filter() -> None:
    from django.conf import settings

    console = settings.LOGGING["handlers"]["console"]
    assert "mask_personal_data" in console["filters"]


def test_celery_tasks_take_ids_only_never_trace_content() -> None:
    import inspect
    import typing

    from celery import Task

    from compaction import tasks

    found = {name: obj for name, obj in vars(tasks).items() if isinstance(obj, Task)}
    assert found, "no task found to check"
    for name, task in found.items():
        hints = typing.get_type_hints(task.run)
        params = [p for p in inspect.signature(task.run).parameters if p != "self"]
        for param in params:
            assert param.endswith(("_id", "_ids")), f"{name}({param}): pass ids, not content"
            assert hints[param] in (int, list[int]), f"{name}({param}): {hints[param]}"
