//! How items look on the terminal: a readable table, or JSON lines with `--json`.

use indicatif::{ProgressBar, ProgressStyle};
use pathdb_store::{EncodedPath, Item, ListedEntry, ListedItem, Timestamp};
use serde::Serialize;
use std::fmt::Display;
use std::io::Write;

/// One item as a JSON object: `{"path", "version", "created_at", "modified_at", "expires_at", "value"}`.
/// Takes an [`Item`] or a listing's [`ListedItem`], which serialize alike.
pub fn item_json(item: &impl Serialize) -> String {
    // Items serialize with the path in canonical text form and the value as stored.
    serde_json::to_string(item).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

/// A bar on stderr when it is a terminal; nothing otherwise (scripts, CI).
pub fn bar(template: &str) -> ProgressBar {
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}

/// RFC 3339 UTC with microseconds, e.g. `2026-11-21T23:05:01.123456Z`.
pub fn rfc3339(t: Timestamp) -> String {
    let micros = t.micros();
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{frac:06}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Prints items as a table (path, version, modified, expires, value) or JSON lines.
pub fn print_items(out: &mut impl Write, items: &[Item], json: bool) -> std::io::Result<()> {
    print_rows(out, items.iter().map(Row::Item), json)
}

/// One node as the API writes it: `{"path": "/a-1/b-2", "node": true}`.
pub fn node_json(path: &impl Display) -> String {
    serde_json::json!({"path": path.to_string(), "node": true}).to_string()
}

/// Prints a listing's entries as [`print_items`] does; a node (a child with items below it and
/// none of its own) prints as its path with a trailing `/`, or with `--json` as the API's object.
pub fn print_entries(
    out: &mut impl Write,
    entries: &[ListedEntry],
    json: bool,
) -> std::io::Result<()> {
    let rows = entries.iter().map(|entry| match entry {
        ListedEntry::Item(item) => Row::Listed(item),
        ListedEntry::Node(path) => Row::Node(path),
    });
    print_rows(out, rows, json)
}

/// What one printed line shows: an item, a listed item (its path still encoded), or a node.
enum Row<'a> {
    Item(&'a Item),
    Listed(&'a ListedItem),
    Node(&'a EncodedPath),
}

fn print_rows<'a>(
    out: &mut impl Write,
    rows: impl Iterator<Item = Row<'a>>,
    json: bool,
) -> std::io::Result<()> {
    if json {
        for row in rows {
            match row {
                Row::Item(item) => writeln!(out, "{}", item_json(item))?,
                Row::Listed(item) => writeln!(out, "{}", item_json(item))?,
                Row::Node(path) => writeln!(out, "{}", node_json(path))?,
            }
        }
        return Ok(());
    }
    let rows: Vec<[String; 5]> = rows
        .map(|row| match row {
            // Read or listed through an alias: the alias, then the item's own path.
            Row::Item(i) => [
                match &i.alias {
                    Some(alias) => format!("{alias} -> {}", i.path),
                    None => i.path.to_string(),
                },
                i.version.to_string(),
                rfc3339(i.modified_at),
                i.expires_at.map(rfc3339).unwrap_or_default(),
                i.value.to_string(),
            ],
            Row::Listed(i) => [
                match &i.alias {
                    Some(alias) => format!("{alias} -> {}", i.path),
                    None => i.path.to_string(),
                },
                i.version.to_string(),
                rfc3339(i.modified_at),
                i.expires_at.map(rfc3339).unwrap_or_default(),
                i.value.to_string(),
            ],
            Row::Node(path) => [
                format!("{path}/"),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ],
        })
        .collect();
    write_table(
        out,
        ["PATH", "VERSION", "MODIFIED", "EXPIRES", "VALUE"],
        &rows,
        &[1],
    )
}

/// Writes `header` and `rows` in aligned columns two spaces apart. Columns listed in
/// `right_aligned` are right-aligned; the last column is not padded (it holds free text).
pub fn write_table<const N: usize>(
    out: &mut impl Write,
    header: [&str; N],
    rows: &[[String; N]],
    right_aligned: &[usize],
) -> std::io::Result<()> {
    let widths: Vec<usize> = (0..N)
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([header[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: [&str; N]| {
        let mut s = String::new();
        for (c, cell) in cells.iter().enumerate() {
            if c + 1 == N {
                s.push_str(cell);
            } else if right_aligned.contains(&c) {
                s.push_str(&format!("{cell:>w$}  ", w = widths[c]));
            } else {
                s.push_str(&format!("{cell:<w$}  ", w = widths[c]));
            }
        }
        s
    };
    writeln!(out, "{}", line(header))?;
    for row in rows {
        writeln!(out, "{}", line(std::array::from_fn(|c| row[c].as_str())))?;
    }
    Ok(())
}
