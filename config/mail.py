"""The e-mail backend of a server without SMTP settings: e-mails are printed to the console
(the worker's log), with personal data masked like every other log line. The alert e-mail is
masked when it is written (``alerts/webhooks.py``); this is the net under any other."""

from __future__ import annotations

from django.core.mail import EmailMessage
from django.core.mail.backends import console

from privacy import masking


class MaskedConsoleEmailBackend(console.EmailBackend):
    def write_message(self, message: EmailMessage) -> None:
        lines = [
            f"Subject: {message.subject}",
            f"From: {message.from_email}",
            f"To: {', '.join(message.to)}",
            "",
            str(message.body),
        ]
        self.stream.write(masking.text_mask("\n".join(lines)) + "\n")
        self.stream.write("-" * 79 + "\n")
