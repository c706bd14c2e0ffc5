"""The real local Kubernetes control plane, built from pinned Go modules (see tools/)."""
