//! Server-side printing: meta.k8s.io Table responses with upstream printer columns per kind.
