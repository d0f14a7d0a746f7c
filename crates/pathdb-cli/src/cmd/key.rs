//! `pathdb key encode|decode|explain`: the key codec from the command line.

use anyhow::{Context, Result};
use base64::Engine as _;
use clap::Subcommand;
use pathdb_keys::KeyPath;
use std::io::Write;

#[derive(Subcommand, Debug)]
pub enum KeyCommand {
    /// Print a key path's binary encoding, as lowercase hex (default) or base64.
    Encode {
        /// A key path in text form, e.g. /user-7/post-1234.
        path: String,
        /// How to print the bytes: hex, or base64 as the AWS CLI shows Binary attributes.
        #[arg(long, value_enum, default_value_t = Format::Hex)]
        format: Format,
        /// Print the partition key (`pk`) and sort key (`sk`) the store uses, one per line.
        #[arg(long)]
        split: bool,
    },
    /// Print the canonical text form of an encoded key path, or explain a stored key: a sort
    /// key (with --partition for its group) of an item, a revision (ff...), a tombstone
    /// (fe...), or a system-partition key (00: expiry index, namespace settings).
    Decode {
        /// The encoded key (hex: either case, an optional 0x prefix; or base64 with --format).
        key: String,
        /// The partition key (`pk`) the key is a sort key of, in the same format.
        #[arg(long)]
        partition: Option<String>,
        /// How the bytes are written.
        #[arg(long, value_enum, default_value_t = Format::Hex)]
        format: Format,
    },
    /// Show each segment's type, bytes and metadata, and the encoded and text sizes.
    Explain {
        /// A key path in text form.
        path: String,
    },
}

/// How key bytes are written on the command line.
#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum Format {
    /// Lowercase hex (either case on input, optional 0x).
    Hex,
    /// Standard base64 (padding optional on input), as DynamoDB tools show Binary values.
    Base64,
}

impl Format {
    /// The name `--format` takes.
    fn name(self) -> &'static str {
        match self {
            Format::Hex => "hex",
            Format::Base64 => "base64",
        }
    }

    fn print(self, bytes: &[u8]) -> String {
        match self {
            Format::Hex => hex::encode(bytes),
            Format::Base64 => BASE64.encode(bytes),
        }
    }

    fn parse(self, text: &str) -> Result<Vec<u8>> {
        let trimmed = text.trim();
        match self {
            Format::Hex => {
                let digits = trimmed.strip_prefix("0x").unwrap_or(trimmed);
                hex::decode(digits).with_context(|| format!("{text:?} is not hex"))
            }
            Format::Base64 => BASE64
                .decode(trimmed)
                .with_context(|| format!("{text:?} is not base64")),
        }
    }
}

/// Standard alphabet; padding written, optional when read.
const BASE64: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
);

/// Runs a key command; with `--json` (`output.json`) each prints one JSON object.
pub fn run(cmd: KeyCommand, output: super::Output) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match cmd {
        KeyCommand::Encode {
            path,
            format,
            split,
        } => {
            let path: KeyPath = path.parse()?;
            if output.json {
                let mut object = serde_json::json!({
                    "path": path.to_string(),
                    "format": format.name(),
                });
                if split {
                    object["pk"] = format.print(&path.partition_key()).into();
                    object["sk"] = format.print(&path.sort_key()).into();
                } else {
                    object["encoded"] = format.print(&path.encode()).into();
                }
                writeln!(out, "{object}")?;
            } else if split {
                writeln!(out, "pk {}", format.print(&path.partition_key()))?;
                writeln!(out, "sk {}", format.print(&path.sort_key()))?;
            } else {
                writeln!(out, "{}", format.print(&path.encode()))?;
            }
        }
        KeyCommand::Decode {
            key,
            partition,
            format,
        } => {
            let bytes = format.parse(&key)?;
            // A key path, or (the text of) one of the store's own keys.
            let (text, is_path) = match partition {
                Some(pk) => (
                    super::storekey::explain(&format.parse(&pk)?, &bytes)?,
                    false,
                ),
                None => match KeyPath::decode(&bytes) {
                    Ok(path) => (path.to_string(), true),
                    // Not a whole path: maybe one of the store's own sort keys.
                    Err(error) => match super::storekey::explain_sort_only(&bytes) {
                        Some(text) => (text, false),
                        None => return Err(error.into()),
                    },
                },
            };
            if output.json {
                let field = if is_path { "path" } else { "stored_key" };
                writeln!(out, "{}", serde_json::json!({ field: text }))?;
            } else {
                writeln!(out, "{text}")?;
            }
        }
        KeyCommand::Explain { path } if output.json => explain_json(&path, &mut out)?,
        KeyCommand::Explain { path } => explain(&path, &mut out)?,
    }
    Ok(())
}

/// `key explain --json`: the shape of the server's `GET /v1/keys/{path}` (without the stored
/// keys), so that a script reads either.
fn explain_json(text: &str, out: &mut impl Write) -> Result<()> {
    let path: KeyPath = text.parse()?;
    let explained = path.explain();
    let segments: Vec<serde_json::Value> = explained
        .segments
        .iter()
        .map(|seg| {
            serde_json::json!({
                "text": seg.text,
                "kind": seg.kind,
                "bytes_hex": hex::encode(&seg.bytes),
                "meta_hex": hex::encode(&seg.meta),
                "type_code": seg.type_code,
            })
        })
        .collect();
    let object = serde_json::json!({
        "path": explained.path,
        "segments": segments,
        "encoded_hex": hex::encode(&explained.encoded),
        "sizes": {
            "encoded": explained.encoded.len(),
            "segment": explained.segment_bytes(),
            "separator": explained.separators(),
            "terminator": 1,
            "metadata": explained.meta_bytes(),
            "text": explained.path.len(),
        },
    });
    writeln!(out, "{object}")?;
    Ok(())
}

fn explain(text: &str, out: &mut impl Write) -> Result<()> {
    let path: KeyPath = text.parse()?;
    let explained = path.explain();
    writeln!(out, "path: {}", explained.path)?;
    let rows: Vec<[String; 4]> = explained
        .segments
        .iter()
        .map(|seg| {
            let meta = format!(
                "{} (len {}, type {})",
                hex::encode(&seg.meta),
                seg.bytes.len(),
                seg.type_code
            );
            [
                seg.text.clone(),
                seg.kind.to_owned(),
                hex::encode(&seg.bytes),
                meta,
            ]
        })
        .collect();
    super::output::write_table(out, ["segment", "type", "bytes", "metadata"], &rows, &[])?;
    writeln!(
        out,
        "encoded: {} bytes ({} segment, {} separator, 1 terminator, {} metadata)",
        explained.encoded.len(),
        explained.segment_bytes(),
        explained.separators(),
        explained.meta_bytes(),
    )?;
    writeln!(out, "text:    {} bytes", explained.path.len())?;
    writeln!(out, "hex:     {}", hex::encode(&explained.encoded))?;
    Ok(())
}
