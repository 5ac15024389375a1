FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    SAWTOOTH_VAR_DIR=/var/lib/sawtooth
WORKDIR /app

COPY pyproject.toml README.md ./
COPY config ./config
COPY sessions ./sessions
COPY compaction ./compaction
COPY team ./team
COPY alerts ./alerts
COPY privacy ./privacy
RUN pip install .

COPY . .
RUN useradd --system --home /app sawtooth \
    && mkdir -p /var/lib/sawtooth && chown sawtooth /var/lib/sawtooth \
    && python manage.py collectstatic --no-input
USER sawtooth
EXPOSE 8000
CMD ["gunicorn", "-c", "config/gunicorn.py", "config.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3"]
