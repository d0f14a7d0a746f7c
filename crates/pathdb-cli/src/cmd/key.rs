//! `pathdb key encode|decode|explain`: the key codec from the command line.

use anyhow::{Context, Result};
use clap::Subcommand;
use pathdb_keys::{KeyPath, KeyPathRef};
use std::io::Write;

#[derive(Subcommand, Debug)]
pub enum KeyCommand {
    /// Print the lowercase hex of a key path's binary encoding.
    Encode {
        /// A key path in text form, e.g. /user-7/post-1234.
        path: String,
    },
    /// Print the canonical text form of a hex-encoded key path.
    Decode {
        /// The encoded key path as hex (either case; an optional 0x prefix).
        hex: String,
    },
    /// Show each segment's type, bytes and metadata, and the encoded and text sizes.
    Explain {
        /// A key path in text form.
        path: String,
    },
}

pub fn run(cmd: KeyCommand) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match cmd {
        KeyCommand::Encode { path } => {
            let path: KeyPath = path.parse()?;
            writeln!(out, "{}", hex::encode(path.encode()))?;
        }
        KeyCommand::Decode { hex: text } => {
            let digits = text.trim();
            let digits = digits.strip_prefix("0x").unwrap_or(digits);
            let bytes = hex::decode(digits).with_context(|| format!("{text:?} is not hex"))?;
            writeln!(out, "{}", KeyPath::decode(&bytes)?)?;
        }
        KeyCommand::Explain { path } => explain(&path, &mut out)?,
    }
    Ok(())
}

fn explain(text: &str, out: &mut impl Write) -> Result<()> {
    let path: KeyPath = text.parse()?;
    let encoded = path.encode();
    let decoded = KeyPathRef::decode(&encoded).context("re-decoding our own encoding")?;
    let canonical = path.to_string();

    // The text of each segment: namespaces and ids alternate.
    let mut labels = Vec::new();
    for element in decoded.elements() {
        labels.push(element.namespace.to_owned());
        if let Some(id) = &element.id {
            labels.push(id.to_id().to_string());
        }
    }

    writeln!(out, "path: {canonical}")?;
    let rows: Vec<[String; 4]> = decoded
        .segments()
        .zip(&labels)
        .enumerate()
        .map(|(i, (seg, label))| {
            let ty = if i % 2 == 0 {
                "namespace"
            } else {
                seg.ty.name()
            };
            let meta = format!(
                "{} (len {}, type {})",
                hex::encode(seg.meta),
                seg.bytes.len(),
                seg.ty as u8
            );
            [label.clone(), ty.to_owned(), hex::encode(seg.bytes), meta]
        })
        .collect();
    super::output::write_table(out, ["segment", "type", "bytes", "metadata"], &rows, &[])?;
    let n = rows.len();
    let segment_bytes: usize = decoded.segments().map(|s| s.bytes.len()).sum();
    let meta_bytes: usize = decoded.segments().map(|s| s.meta.len()).sum();
    writeln!(
        out,
        "encoded: {} bytes ({segment_bytes} segment, {} separator, 1 terminator, {meta_bytes} metadata)",
        encoded.len(),
        n - 1
    )?;
    writeln!(out, "text:    {} bytes", canonical.len())?;
    writeln!(out, "hex:     {}", hex::encode(&encoded))?;
    Ok(())
}
