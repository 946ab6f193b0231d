//! Eviction policies shared by Augur's server store and its offline simulators, and
//! the exact cache simulators that are the ground truth for the MRC models.
//!
//! DESIGN.md's "one policy implementation" principle lives here: the sampled-eviction
//! logic in [`policy`] is generic over where candidates come from ([`policy::Candidates`]),
//! so the server's keyspace and the simulators run the very same code.

pub mod policy;
