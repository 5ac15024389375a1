import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

from config.secret import production_key_require  # noqa: E402  (after settings are set up)

production_key_require()
