//! Discovery documents: /api, /apis, per group-version resource lists, aggregated discovery v2/v2beta1, /version.
