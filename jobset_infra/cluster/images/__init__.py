"""Container images built without a Docker daemon, reproducibly (`jobset-infra image build`).

`spec` declares what goes into each image (the one declaration the Dockerfile is checked
against), `oci` writes layers and OCI layouts byte for byte the same from the same inputs,
`debian` and `python_app` fill a root filesystem from Debian's packages and hash-checked wheels,
and `build` runs the steps and caches each image by its inputs.
"""
