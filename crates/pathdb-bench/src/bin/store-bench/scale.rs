//! `--scale`: how get, list and durable put latency grow with the number of items.
//!
//! One dataset grows through the sizes given (`--scale 100000,1000000,10000000`): the engines
//! (PathDB and raw redb, those of `--engines`) are loaded with the first size, measured, then the
//! users the next size adds are loaded into the same files (inserted among the existing ones, as
//! an application's data grows), measured again, and so on. At the largest size the files are
//! then reopened with redb's page cache set to `--small-cache-mb` (smaller than the data) and
//! measured once more. Before each measurement the files are synced and every entry is read
//! once (a warm page cache, as in service). Each measurement interleaves the engines in rounds, as the main table
//! does, with `--get-ops`, `--list-ops` and `--put-ops` operations per engine and size.
//!
//! The run prints one table per size and writes a PNG (`--plot`): p50 and p99 latency against
//! the item count, one panel per operation, both axes logarithmic.

use crate::dataset::Dataset;
use crate::engine::Engine;
use crate::stats::{self, Measurement};
use crate::{Args, Row, Sample, pathdb, raw_redb, run_row};
use plotters::prelude::*;
use std::path::Path;
use std::time::Instant;

/// The rows the scale run measures.
const ROWS: [Row; 3] = [Row::Get, Row::List, Row::Put];

/// One measured point: an engine's row at a size, with the page cache it had.
struct Point {
    items: u64,
    /// redb's page cache in MiB when it was set smaller than the data; `None`: redb's default.
    cache_mb: Option<u64>,
    m: Measurement,
}

/// Runs the scale measurement; see the module docs.
///
/// # Errors
/// Engine failures, a size over 1M items without `--large`, the plot cannot be written.
pub fn run(args: &Args, sizes: &[u64], dir: &Path) -> anyhow::Result<()> {
    let mut sizes = sizes.to_vec();
    sizes.sort_unstable();
    sizes.dedup();
    let largest = *sizes
        .last()
        .ok_or_else(|| anyhow::anyhow!("--scale needs sizes"))?;
    anyhow::ensure!(
        largest <= crate::DEFAULT_ITEMS || args.large,
        "a scale size over {} items needs --large",
        crate::DEFAULT_ITEMS
    );
    let names: Vec<&str> = args
        .engines
        .iter()
        .map(String::as_str)
        .filter(|e| matches!(*e, "pathdb" | "redb"))
        .collect();
    anyhow::ensure!(
        !names.is_empty(),
        "--scale runs the engines pathdb and redb"
    );
    let full = Dataset::new(largest, args.seed);
    let mut points: Vec<Point> = Vec::new();
    let mut loaded_users = 0;
    let mut engines: Vec<Box<dyn Engine>> = Vec::new();
    for &size in &sizes {
        let n_users = full.users_for(size);
        let data = full.prefix(n_users);
        // PathDB's store holds its file's lock: close before loading more.
        engines.clear();
        let started = Instant::now();
        for name in &names {
            engines.push(open(name, dir, &data, loaded_users..n_users, None)?);
        }
        loaded_users = n_users;
        println!(
            "scale: {} items loaded in {:.1} s; {}",
            data.n_items(),
            started.elapsed().as_secs_f64(),
            file_sizes(dir)?
        );
        settle(dir, &engines)?;
        for m in measure(&engines, args, &data)? {
            points.push(Point {
                items: data.n_items(),
                cache_mb: None,
                m,
            });
        }
    }
    if args.small_cache_mb > 0 {
        let data = full.prefix(loaded_users);
        engines.clear();
        let bytes = usize::try_from(args.small_cache_mb << 20)?;
        for name in &names {
            engines.push(open(
                name,
                dir,
                &data,
                loaded_users..loaded_users,
                Some(bytes),
            )?);
        }
        println!(
            "scale: {} items, reopened with a {} MiB redb page cache",
            data.n_items(),
            args.small_cache_mb
        );
        settle(dir, &engines)?;
        for m in measure(&engines, args, &data)? {
            points.push(Point {
                items: data.n_items(),
                cache_mb: Some(args.small_cache_mb),
                m,
            });
        }
    }
    drop(engines);

    println!();
    println!("| items | redb cache | row | engine | ops | p50 | p99 | ops/s |");
    println!("| ---: | --- | --- | --- | ---: | ---: | ---: | ---: |");
    for p in &points {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            stats::fmt_rate(p.items as f64),
            p.cache_mb
                .map_or_else(|| "default (1 GiB)".to_owned(), |mb| format!("{mb} MiB")),
            p.m.row,
            p.m.engine,
            p.m.ops,
            stats::fmt_latency(p.m.p50),
            stats::fmt_latency(p.m.p99),
            stats::fmt_rate(p.m.ops_per_sec()),
        );
    }
    match plot(&points, &args.plot, &args.plot_font) {
        Ok(()) => println!("plot: {}", args.plot.display()),
        Err(e) => eprintln!("plot {} not written: {e:#}", args.plot.display()),
    }
    Ok(())
}

fn open(
    name: &str,
    dir: &Path,
    data: &Dataset,
    users: std::ops::Range<u64>,
    cache_size: Option<usize>,
) -> anyhow::Result<Box<dyn Engine>> {
    Ok(match name {
        "pathdb" => Box::new(pathdb::PathDb::load(
            &dir.join("pathdb.redb"),
            data,
            users,
            crate::PRELOAD_BATCH,
            cache_size,
        )?),
        _ => Box::new(raw_redb::RawRedb::load(
            &dir.join("raw.redb"),
            data,
            users,
            crate::PRELOAD_BATCH,
            true,
            cache_size,
        )?),
    })
}

/// Before measuring: flushes the loaded files (the load does not sync, and the kernel writing
/// gigabytes back during the measurement would be timed), then reads every entry once so each
/// engine's page cache is as full as it gets in service rather than empty after the reopen.
fn settle(dir: &Path, engines: &[Box<dyn Engine>]) -> anyhow::Result<()> {
    let started = Instant::now();
    for entry in std::fs::read_dir(dir)? {
        std::fs::File::open(entry?.path())?.sync_all()?;
    }
    let synced = started.elapsed();
    for engine in engines {
        let n = engine.warm()?;
        anyhow::ensure!(n > 0, "{} read no entries", engine.name());
    }
    println!(
        "scale: files synced in {:.1} s, caches warmed in {:.1} s",
        synced.as_secs_f64(),
        (started.elapsed() - synced).as_secs_f64()
    );
    Ok(())
}

fn file_sizes(dir: &Path) -> anyhow::Result<String> {
    let mut parts = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        parts.push(format!(
            "{}: {:.0} MB",
            entry.file_name().to_string_lossy(),
            entry.metadata()?.len() as f64 / 1e6
        ));
    }
    parts.sort();
    Ok(parts.join(", "))
}

/// The scale rows on every engine, in interleaved rounds.
fn measure(
    engines: &[Box<dyn Engine>],
    args: &Args,
    data: &Dataset,
) -> anyhow::Result<Vec<Measurement>> {
    let rounds = args.rounds.max(1);
    let mut out = Vec::new();
    for row in ROWS {
        let mut samples: Vec<Sample> = engines.iter().map(|_| Sample::default()).collect();
        for round in 0..rounds {
            for (engine, sample) in engines.iter().zip(&mut samples) {
                let seed = args.seed ^ (row as u64 + 1).wrapping_mul(0x9e37_79b9) ^ round as u64;
                sample.merge(run_row(
                    engine.as_ref(),
                    row,
                    args,
                    data,
                    seed,
                    round == 0,
                    rounds,
                )?);
            }
        }
        for (engine, sample) in engines.iter().zip(samples) {
            let m = Measurement::new(
                row.label().to_owned(),
                engine.name(),
                sample.latencies,
                sample.items,
                sample.wall,
            );
            println!(
                "{:>12} items  {:<28} {:<8} p50 {:>10}  p99 {:>10}",
                stats::fmt_rate(data.n_items() as f64),
                m.row,
                m.engine,
                stats::fmt_latency(m.p50),
                stats::fmt_latency(m.p99)
            );
            out.push(m);
        }
    }
    Ok(out)
}

/// Draws one panel per row: p50 (solid, circles) and p99 (thin) against items, log-log; the
/// small-cache points as crosses.
fn plot(points: &[Point], path: &Path, font: &Path) -> anyhow::Result<()> {
    let font_bytes = std::fs::read(font)
        .map_err(|e| anyhow::anyhow!("font {} (--plot-font): {e}", font.display()))?;
    // plotters keeps the font for the life of the process.
    plotters::style::register_font("sans-serif", FontStyle::Normal, font_bytes.leak())
        .map_err(|_| anyhow::anyhow!("font {} is not a TrueType font", font.display()))?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let root = BitMapBackend::new(path, (1500, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(
        "PathDB store vs raw redb: latency against item count (p50 solid, p99 thin; x = small redb cache)",
        ("sans-serif", 20),
    )?;
    let panels = root.split_evenly((1, ROWS.len()));
    let max_items = points.iter().map(|p| p.items).max().unwrap_or(1) as f64;
    let min_items = points.iter().map(|p| p.items).min().unwrap_or(1) as f64;
    let engines: Vec<&'static str> = {
        let mut e: Vec<&'static str> = points.iter().map(|p| p.m.engine).collect();
        e.dedup();
        e.sort_unstable();
        e.dedup();
        e
    };
    let colors = [RGBColor(200, 60, 30), RGBColor(40, 90, 200)];
    for (panel, row) in panels.iter().zip(ROWS) {
        let label = row.label();
        let of_row: Vec<&Point> = points.iter().filter(|p| p.m.row == label).collect();
        let micros = |d: std::time::Duration| d.as_secs_f64() * 1e6;
        let y_min = of_row
            .iter()
            .map(|p| micros(p.m.p50))
            .fold(f64::MAX, f64::min)
            / 1.5;
        let y_max = of_row.iter().map(|p| micros(p.m.p99)).fold(0.0, f64::max) * 1.5;
        if of_row.is_empty() || y_min <= 0.0 {
            continue;
        }
        let mut chart = ChartBuilder::on(panel)
            .caption(label, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(
                (min_items / 1.5..max_items * 1.5).log_scale(),
                (y_min..y_max).log_scale(),
            )?;
        chart
            .configure_mesh()
            .x_desc("items")
            .y_desc("latency (µs)")
            .x_label_formatter(&|x| format_items(*x))
            .y_labels(6)
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()?;
        for (engine, color) in engines.iter().zip(colors.iter().cycle()) {
            let series: Vec<&&Point> = of_row
                .iter()
                .filter(|p| p.m.engine == *engine && p.cache_mb.is_none())
                .collect();
            let p50: Vec<(f64, f64)> = series
                .iter()
                .map(|p| (p.items as f64, micros(p.m.p50)))
                .collect();
            let p99: Vec<(f64, f64)> = series
                .iter()
                .map(|p| (p.items as f64, micros(p.m.p99)))
                .collect();
            chart
                .draw_series(LineSeries::new(p50.clone(), color.stroke_width(3)))?
                .label(format!("{engine} p50"))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3))
                });
            chart.draw_series(p50.iter().map(|&xy| Circle::new(xy, 4, color.filled())))?;
            chart.draw_series(LineSeries::new(p99, color.stroke_width(1)))?;
            for p in of_row
                .iter()
                .filter(|p| p.m.engine == *engine && p.cache_mb.is_some())
            {
                let x = p.items as f64;
                chart.draw_series([
                    Cross::new((x, micros(p.m.p50)), 7, color.stroke_width(3)),
                    Cross::new((x, micros(p.m.p99)), 5, color.stroke_width(1)),
                ])?;
            }
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()?;
    }
    root.present()?;
    Ok(())
}

fn format_items(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.0}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.0}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}
