//! Augur's network server.
