//! Controllers and the scheduler, running on shared informers through the `Client` trait (not yet built).
