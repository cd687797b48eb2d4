//! The web dashboard served at `/ui/` (not yet built).
