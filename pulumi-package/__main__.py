"""jobset-infra's component package: hosts the five components for the Pulumi engine.

The engine runs this folder (`python pulumi-package <engine address> ...`) when a program in
another language uses the package; the schema is inferred from the classes in
`jobset_infra.components.package`.
"""

from importlib.metadata import version

from pulumi.provider.experimental import component_provider_host

from jobset_infra.components.package import COMPONENTS, PACKAGE_NAME

if __name__ == "__main__":
    component_provider_host(list(COMPONENTS), name=PACKAGE_NAME, version=version("jobset-infra"))
