//! Unit tests of the simulated pod status.
