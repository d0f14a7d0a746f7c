//! Access control's data (docs/access.md): path rules and how they match (`rules`), roles
//! (`roles`) and issued tokens (`tokens`), with their records in the system partition. It reads
//! and checks; it never writes (write/access.rs does) and never decides a request: the server
//! asks a [`rules::Grant`] about each path a request touches.

pub(crate) mod rules;
pub(crate) mod roles;
pub(crate) mod tokens;
