//! Per-row measurements and the report tables.

use std::fmt::Write as _;
use std::time::Duration;

/// One engine's measurement of one row.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// Row name.
    pub row: String,
    /// Engine name.
    pub engine: &'static str,
    /// Operations timed.
    pub ops: usize,
    /// Items returned or written by those operations (lists: items per page; tx: 10 per op).
    pub items: usize,
    /// Wall time of the whole row (concurrent rows: first start to last finish).
    pub wall: Duration,
    /// Median latency of one operation.
    pub p50: Duration,
    /// 99th percentile latency of one operation.
    pub p99: Duration,
}

impl Measurement {
    /// Builds a measurement from per-operation latencies in nanoseconds.
    pub fn new(
        row: String,
        engine: &'static str,
        mut latencies_ns: Vec<u64>,
        items: usize,
        wall: Duration,
    ) -> Measurement {
        latencies_ns.sort_unstable();
        let at = |q: f64| {
            if latencies_ns.is_empty() {
                return Duration::ZERO;
            }
            let i = ((latencies_ns.len() as f64 * q).ceil() as usize).clamp(1, latencies_ns.len());
            Duration::from_nanos(latencies_ns[i - 1])
        };
        Measurement {
            row,
            engine,
            ops: latencies_ns.len(),
            items,
            p50: at(0.50),
            p99: at(0.99),
            wall,
        }
    }

    /// Operations per second over the row's wall time.
    pub fn ops_per_sec(&self) -> f64 {
        self.ops as f64 / self.wall.as_secs_f64()
    }

    /// Items per second over the row's wall time.
    pub fn items_per_sec(&self) -> f64 {
        self.items as f64 / self.wall.as_secs_f64()
    }
}

/// `12.3 µs`, `4.56 ms`.
pub fn fmt_latency(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.1} µs")
    } else {
        format!("{:.2} ms", us / 1000.0)
    }
}

/// `1,234,567` (3 significant digits below 1000).
pub fn fmt_rate(r: f64) -> String {
    if r < 100.0 {
        return format!("{r:.1}");
    }
    let n = r.round() as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The full table: one line per row and engine, with PathDB's ratios on its lines.
///
/// `cost vs redb` is raw redb's ops/s divided by PathDB's (how many times slower PathDB is; the
/// goal is <= 1.3), and PathDB's p50 latency divided by redb's (less sensitive to other
/// processes' load than the mean behind ops/s); `vs SQLite` is PathDB's ops/s divided by the fastest engine whose name
/// starts with `sqlite` (> 1 = PathDB ahead).
pub fn table(results: &[Measurement], pathdb: &str, raw: &str, sqlite: &str) -> String {
    let mut out = String::new();
    out.push_str(
        "| row | engine | ops | ops/s | items/s | p50 | p99 | PathDB cost vs redb (ops/s) | (p50) | PathDB vs SQLite |\n",
    );
    out.push_str("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    let mut rows: Vec<&str> = Vec::new();
    for m in results {
        if !rows.contains(&m.row.as_str()) {
            rows.push(&m.row);
        }
    }
    for row in rows {
        let find = |engine: &str| results.iter().find(|m| m.row == row && m.engine == engine);
        for m in results.iter().filter(|m| m.row == row) {
            let (vs_raw, vs_raw_p50, vs_sqlite) = if m.engine == pathdb {
                (
                    find(raw).map_or("".into(), |r| {
                        format!("{:.2}x", r.ops_per_sec() / m.ops_per_sec())
                    }),
                    find(raw).map_or("".into(), |r| {
                        format!("{:.2}x", m.p50.as_secs_f64() / r.p50.as_secs_f64())
                    }),
                    results
                        .iter()
                        .filter(|s| s.row == row && s.engine.starts_with(sqlite))
                        .map(Measurement::ops_per_sec)
                        .max_by(f64::total_cmp)
                        .map_or("".into(), |best| format!("{:.2}x", m.ops_per_sec() / best)),
                )
            } else {
                (String::new(), String::new(), String::new())
            };
            let items = if m.items == m.ops {
                String::new()
            } else {
                fmt_rate(m.items_per_sec())
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                row,
                m.engine,
                m.ops,
                fmt_rate(m.ops_per_sec()),
                items,
                fmt_latency(m.p50),
                fmt_latency(m.p99),
                vs_raw,
                vs_raw_p50,
                vs_sqlite
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_formatting() {
        let m = Measurement::new(
            "get".into(),
            "x",
            (1..=100).rev().collect(),
            100,
            Duration::from_secs(1),
        );
        assert_eq!(m.p50, Duration::from_nanos(50));
        assert_eq!(m.p99, Duration::from_nanos(99));
        assert_eq!(fmt_rate(1_234_567.4), "1,234,567");
        assert_eq!(fmt_rate(123.0), "123");
        assert_eq!(fmt_latency(Duration::from_micros(4_560)), "4.56 ms");
    }
}
