//! A key path taken apart: each segment's text, type, bytes and metadata, and the sizes of the
//! encoding. What `pathdb key explain` prints and the web console shows.

use crate::{KeyPath, KeyPathRef};

/// One segment of an [`Explanation`]: a namespace or an id.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ExplainedSegment {
    /// The segment's text: the namespace, or the id as written in a path.
    pub text: String,
    /// `namespace`, or the id's type name (`integer`, `desc string`, ...).
    pub kind: &'static str,
    /// The segment's encoded bytes.
    pub bytes: Vec<u8>,
    /// The segment's metadata varint bytes.
    pub meta: Vec<u8>,
    /// The segment type code stored in the metadata.
    pub type_code: u8,
}

/// A key path's encoding, segment by segment.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Explanation {
    /// The canonical text form.
    pub path: String,
    /// Namespaces and ids, alternating, in order.
    pub segments: Vec<ExplainedSegment>,
    /// The whole encoding.
    pub encoded: Vec<u8>,
}

impl Explanation {
    /// Bytes of all segments together.
    pub fn segment_bytes(&self) -> usize {
        self.segments.iter().map(|s| s.bytes.len()).sum()
    }

    /// Bytes of all metadata together.
    pub fn meta_bytes(&self) -> usize {
        self.segments.iter().map(|s| s.meta.len()).sum()
    }

    /// Separator bytes: one between two segments.
    pub fn separators(&self) -> usize {
        self.segments.len().saturating_sub(1)
    }
}

impl KeyPath {
    /// Takes the encoding apart, segment by segment.
    ///
    /// ```
    /// let path: pathdb_keys::KeyPath = "/season-2026-spring/score-!1500".parse()?;
    /// let explained = path.explain();
    /// assert_eq!(explained.segments[3].kind, "desc integer");
    /// assert_eq!(explained.segments[3].text, "!1500");
    /// assert_eq!(explained.encoded.len(), 33);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn explain(&self) -> Explanation {
        let encoded = self.encode();
        // Our own encoding always decodes; the element texts come from the typed path, which
        // holds the same segments in the same order.
        let decoded = match KeyPathRef::decode(&encoded) {
            Ok(decoded) => decoded,
            Err(e) => unreachable!("a KeyPath's own encoding decodes: {e}"),
        };
        let mut texts = Vec::new();
        for element in self.elements() {
            texts.push(element.namespace().to_string());
            if let Some(id) = element.id() {
                texts.push(id.to_string());
            }
        }
        let segments: Vec<ExplainedSegment> = decoded
            .segments()
            .zip(texts)
            .enumerate()
            .map(|(i, (segment, text))| ExplainedSegment {
                text,
                kind: if i % 2 == 0 {
                    "namespace"
                } else {
                    segment.ty.name()
                },
                bytes: segment.bytes.to_vec(),
                meta: segment.meta.to_vec(),
                type_code: segment.ty as u8,
            })
            .collect();
        drop(decoded);
        Explanation {
            path: self.to_string(),
            segments,
            encoded,
        }
    }
}
