//! PathDB key paths: the typed model, the text syntax and the order-preserving binary codec of
//! `keypath-format.md`. No I/O.
//!
//! A key path such as `/user-7/post-1234/comment-!1678901234` is a list of elements, each a
//! namespace and an id. Its binary form sorts, byte by byte, the way the path reads: integers
//! numerically, a parent right before its subtree, descending ids in reverse.
//!
//! ```
//! use pathdb_keys::KeyPath;
//!
//! let post: KeyPath = "/user-7/post-2".parse()?;
//! let later: KeyPath = "/user-7/post-10".parse()?;
//! assert!(post.encode() < later.encode()); // 2 < 10, no zero-padding
//! assert_eq!(KeyPath::decode(&post.encode())?, post);
//! assert!(post.subtree_range().contains(&"/user-7/post-2/comment-1".parse::<KeyPath>()?.encode()));
//! assert!(!post.subtree_range().contains(&"/user-7/post-20".parse::<KeyPath>()?.encode()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The byte layout and the order across id types are specified in `docs/key-format.md`.

#![deny(missing_docs)]

mod binary;
mod check;
mod error;
mod explain;
mod id;
mod int;
mod namespace;
mod path;
mod range;
#[cfg(feature = "serde")]
mod serde_impl;
mod text;

pub use binary::{ESCAPE, ElementRef, IdRef, KeyPathRef, SEPARATOR, Segment, Sink, TERMINATOR};
pub use check::sort_key_body_len;
pub use error::{BuildError, DecodeError, ParseError, Rule};
pub use explain::{ExplainedSegment, Explanation};
pub use id::{Desc, Id, SegmentType};
pub use int::Int;
pub use namespace::{INTERN_CAP, MAX_NAMESPACE_LEN, Namespace};
pub use path::{Element, KeyPath, KeyPathBuilder};
pub use range::{GROUP_SORT_KEY, KeyRange};
pub use text::format_id;
pub use uuid::Uuid;

#[cfg(test)]
mod test;
