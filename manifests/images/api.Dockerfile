# The API and the controller: one image, `callscope serve ...` or `callscope controller`.
#   docker build -f manifests/images/api.Dockerfile -t callscope:dev .
# Runs as a non-root user with a read-only root filesystem: it writes only to
# /var/lib/callscope (CALLSCOPE_DATA_DIR, spool) and /tmp, both volumes in the manifests.
FROM python:3.11-slim AS build
WORKDIR /src
RUN python -m venv /opt/callscope
COPY pyproject.toml README.md ./
COPY callscope ./callscope
COPY api ./api
COPY operator ./operator
COPY workers ./workers
COPY analysis ./analysis
RUN /opt/callscope/bin/pip install --no-cache-dir .

FROM python:3.11-slim
RUN groupadd --gid 10001 callscope \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /var/lib/callscope --shell /usr/sbin/nologin callscope \
 && mkdir -p /var/lib/callscope && chown 10001:10001 /var/lib/callscope
COPY --from=build /opt/callscope /opt/callscope
ENV PATH=/opt/callscope/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/var/lib/callscope \
    CALLSCOPE_DATA_DIR=/var/lib/callscope
VOLUME ["/var/lib/callscope", "/tmp"]
USER 10001:10001
EXPOSE 8080 8081
ENTRYPOINT ["callscope"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080"]
