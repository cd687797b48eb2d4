//! OpenAPI v2 and v3 documents built from k8s-openapi schemas, plus schema lookups (patch metadata, unknown fields).
