"""jobset-infra: GKE + TPU slices + JobSet (Python controller) + Kueue with Pulumi."""

__version__ = "0.1.0"
