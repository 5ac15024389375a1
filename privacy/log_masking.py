"""Logs never carry personal data in clear: a filter on every handler masks each record.

Log calls pass ids, not trace content (``logger.exception("replay %s failed", run.pk)``), but
an exception's message or traceback can still quote content; this filter is the net under
that. It imports only ``privacy.masking`` (no models), so logging can load it before Django's
apps are ready, and it never queries: a found person's names alone are masked only when the
request has read them already (a log line may be about the database being down).
"""

from __future__ import annotations

import logging

from privacy import masking


class MaskPersonalData(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = masking.text_mask(message, read_names=False)
        if masked != message:
            record.msg, record.args = masked, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = masking.text_mask(record.exc_text, read_names=False)
        return True
