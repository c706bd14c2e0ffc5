# The jobset-controller image: slim, non-root, reproducible, read-only-root friendly.
#
# Build (from the repository root):
#   docker build -t jobset-controller:0.1.0 .
# Or let the JobSetSystem component build and push it (ImageBuild). See docs/platform.md.
#
# Reproducible: the base image is an exact Python patch release, pip/setuptools/wheel and every
# runtime dependency are pinned (the controller's full closure, installed with --no-deps so
# nothing floats), no pip cache, no bytecode written at run time, and SOURCE_DATE_EPOCH fixes
# the timestamps the wheel build records. Only the controller's dependencies are installed: the
# Pulumi SDKs are for `pulumi up`, not for the pod.

# The base by digest, so a re-pushed tag cannot change what we build on: the multi-platform
# manifest digest of python:3.11.13-slim-bookworm that `docker pull` reports (not pulled here:
# no registry access; the digest is the one public build records pinning that tag give).
ARG PYTHON_IMAGE=python:3.11.13-slim-bookworm@sha256:86adf8dbadc3d6e82ee5dd2c74bec2e1c2467cdad47886280501df722372d2e1

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    SOURCE_DATE_EPOCH=1767225600
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
RUN pip install pip==25.1.1 setuptools==80.9.0 wheel==0.45.1
# Runtime dependencies of jobset-controller, pinned with their transitive closure.
RUN pip install --no-deps --only-binary=:all: \
      aiohappyeyeballs==2.7.1 aiohttp==3.14.5 aiosignal==1.4.0 annotated-types==0.8.0 \
      attrs==26.1.0 cel-python==0.5.0 certifi==2026.10.19.post1 frozenlist==1.8.0 \
      google-re2==1.1.20251105 idna==3.20 importlib-resources==7.1.0 jmespath==1.1.0 \
      jsonschema==4.26.0 jsonschema-specifications==2025.9.1 kubernetes-asyncio==36.1.0 \
      kubernetes-validate==1.37.0 lark==1.3.1 multidict==7.2.1 packaging==26.4 \
      pendulum==3.3.0 prometheus-client==0.26.0 propcache==0.5.4 pydantic==2.14.4 \
      pydantic-core==2.50.5 python-dateutil==4.0.0 pyyaml==6.0.4 referencing==0.37.0 \
      rpds-py==2026.9.1 six==1.17.0 typing-extensions==4.16.0 typing-inspection==0.4.5 \
      tzdata==2026.6 urllib3==2.8.0 yarl==1.25.1
# The package itself, from source, without pulling its (Pulumi) dependencies.
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY jobset_infra ./jobset_infra
RUN pip install --no-deps --no-build-isolation . \
 && python -m compileall -q /opt/venv/lib \
 && jobset-controller --help > /dev/null

FROM ${PYTHON_IMAGE}
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /opt/venv /opt/venv
# A numeric non-root user: the kubelet can check runAsNonRoot without reading /etc/passwd.
USER 65532:65532
WORKDIR /tmp
EXPOSE 8081 8443
ENTRYPOINT ["jobset-controller"]
