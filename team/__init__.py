"""Team: what people do together around the traces: members of a project and their roles
(the members page, ``manage.py adduser`` and ``addmember``), comments on a session or a span
with their edit history, each user's saved filters of the sessions list, and verdict
feedback: members' right / wrong on a compaction's lost and kept facts and on alerts, the
project's precision per verdict kind (``/projects/<id>/feedback/``, ``GET
/api/v1/feedback/summary``) and the JSON Lines export ``benchmarks/retention.py --feedback``
reads. Share links are static (``static/js/share.js``): no server code.

The ``Membership`` model itself stays in the sessions app (``sessions.models``, label
"traces"): it is the access foundation that every app's permission checks read
(``sessions.access.require_role``), and moving it here would make sessions depend on team.
Team holds the pages and services that change memberships, and reads the model from there.
"""
