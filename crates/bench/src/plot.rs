//! `--plot DIR`: one SVG per preset and measure — throughput and bytes
//! written per engine × policy (the shape of the paper's bar figures).
//! Uses `plotters` with its SVG backend only, so no font or image
//! libraries are needed: text is left to the SVG viewer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::BenchError;
use crate::report::RunReport;

/// Writes `<preset>-throughput.svg` and `<preset>-bytes.svg` for every
/// preset in `runs`; returns the files written.
pub fn write_plots(runs: &[RunReport], dir: &Path) -> Result<Vec<PathBuf>, BenchError> {
    std::fs::create_dir_all(dir)
        .map_err(|source| BenchError::Io { what: format!("create {}", dir.display()), source })?;
    let mut by_preset: BTreeMap<&str, Vec<&RunReport>> = BTreeMap::new();
    for r in runs {
        by_preset.entry(r.preset.as_str()).or_default().push(r);
    }
    let mut written = Vec::new();
    for (preset, runs) in by_preset {
        let labels: Vec<String> = runs.iter().map(|r| label(r)).collect();
        let ops: Vec<Vec<f64>> = runs.iter().map(|r| vec![r.ops_per_sec / 1000.0]).collect();
        let path = dir.join(format!("{preset}-throughput.svg"));
        bars(&path, &format!("{preset}: throughput"), "K ops/s", &labels, &["ops/s"], &ops)?;
        written.push(path);
        let mb = |b: u64| b as f64 / 1048576.0;
        let bytes: Vec<Vec<f64>> =
            runs.iter().map(|r| vec![mb(r.bytes_wal), mb(r.bytes_flushed), mb(r.bytes_compacted)]).collect();
        let path = dir.join(format!("{preset}-bytes.svg"));
        bars(&path, &format!("{preset}: bytes written"), "MB", &labels, &["WAL", "flushes", "compactions"], &bytes)?;
        written.push(path);
    }
    Ok(written)
}

fn label(r: &RunReport) -> String {
    if r.policy == "-" || r.policy.is_empty() { r.engine.clone() } else { format!("{} {}", r.engine, r.policy) }
}

/// A grouped bar chart: one group per label, one bar per series.
fn bars(
    path: &Path,
    title: &str,
    y_desc: &str,
    labels: &[String],
    series: &[&str],
    values: &[Vec<f64>],
) -> Result<(), BenchError> {
    let err = |e: String| BenchError::Io { what: format!("plot {}", path.display()), source: std::io::Error::other(e) };
    let width = (160 + labels.len() as u32 * 90).max(480);
    let root = SVGBackend::new(path, (width, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
    let max = values.iter().flatten().copied().fold(0.0f64, f64::max).max(1e-9) * 1.1;
    let n = labels.len();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(70)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..n as f64, 0f64..max)
        .map_err(|e| err(e.to_string()))?;
    chart.configure_mesh().disable_x_mesh().x_labels(0).y_desc(y_desc).draw().map_err(|e| err(e.to_string()))?;
    // Category names under each group, placed in pixels because the x axis
    // is numeric (so bars can sit at fractional positions).
    let style = TextStyle::from(("sans-serif", 12)).pos(Pos::new(HPos::Center, VPos::Top));
    for (i, name) in labels.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        root.draw(&Text::new(name.clone(), (px, py + 8), style.clone())).map_err(|e| err(e.to_string()))?;
    }
    let k = series.len() as f64;
    for (s, name) in series.iter().enumerate() {
        let color = Palette99::pick(s).to_rgba();
        chart
            .draw_series(values.iter().enumerate().map(|(i, v)| {
                // Split each segment into `k` sub-bars.
                let x0 = i as f64 + 0.1 + 0.8 * s as f64 / k;
                let x1 = x0 + 0.8 / k;
                let y = v.get(s).copied().unwrap_or(0.0);
                Rectangle::new([(x0, 0.0), (x1, y)], color.filled())
            }))
            .map_err(|e| err(e.to_string()))?
            .label(*name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    if series.len() > 1 {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(e.to_string()))?;
    }
    root.present().map_err(|e| err(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_one_svg_per_preset_and_measure() {
        let dir = tempfile::tempdir().expect("tempdir");
        let run = |engine: &str, policy: &str, ops: f64| RunReport {
            engine: engine.into(),
            policy: policy.into(),
            preset: "paper-write-zipf".into(),
            ops_per_sec: ops,
            bytes_wal: 10 << 20,
            bytes_flushed: 5 << 20,
            ..RunReport::default()
        };
        let runs = [run("accordion", "none", 1000.0), run("accordion", "basic", 2000.0), run("rocksdb", "-", 1500.0)];
        let files = write_plots(&runs, dir.path()).expect("plots");
        assert_eq!(files.len(), 2);
        let svg = std::fs::read_to_string(&files[0]).expect("svg");
        assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
        assert!(svg.contains("accordion basic"), "labels are in the plot");
        assert!(svg.contains("<rect"), "bars are drawn");
    }
}
