//! Alias templates (docs/aliases.md): their syntax and how an item's value fills one
//! (`template`), and the build record that says where a template added to a namespace with
//! items stands (`builds`). The alias record's bytes are in encoding/alias.rs, the read policy
//! in read/aliases.rs, the stage that keeps aliases exact in write/stages/aliases.rs, and the
//! builds' writes in write/alias_builds.rs. It never reads a definition and never writes.

pub(crate) mod template;
pub(crate) mod builds;
