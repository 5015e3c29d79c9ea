//! `--plot FILE.svg|png`: GB/s against size, one line per kernel, one panel per
//! kernel family, with the device-to-device copy measured in the same run drawn
//! as the roofline (dashed). Text is drawn with a TTF font found on the system
//! (or named by `REDJIT_PLOT_FONT`), so SVG and PNG look alike.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::prelude::*;

use crate::error::{CliError, CliResult};

/// One kernel's line.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    /// (elements, GB/s), any order.
    pub points: Vec<(f64, f64)>,
}

/// One panel: a family's kernels and the copy roofline.
#[derive(Debug, Clone)]
pub struct Panel {
    pub title: String,
    pub series: Vec<Series>,
    pub roofline: Vec<(f64, f64)>,
}

/// The image format, from the file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Svg,
    Png,
}

/// `.svg` or `.png`, else a usage error naming the file.
pub fn format_of(path: &Path) -> CliResult<Format> {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("svg") => Ok(Format::Svg),
        Some("png") => Ok(Format::Png),
        _ => Err(CliError::usage(format!(
            "--plot {}: the file must end in .svg or .png",
            path.display()
        ))),
    }
}

/// Fonts tried in order after `$REDJIT_PLOT_FONT`.
const FONT_CANDIDATES: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
    "/Library/Fonts/Arial.ttf",
];

/// Registers a sans-serif font once; `Err` names where it looked.
pub fn ensure_font() -> CliResult {
    static FONT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let r = FONT.get_or_init(|| {
        let mut tried: Vec<PathBuf> = Vec::new();
        if let Some(p) = std::env::var_os("REDJIT_PLOT_FONT") {
            tried.push(PathBuf::from(p));
        }
        tried.extend(FONT_CANDIDATES.iter().map(PathBuf::from));
        for p in &tried {
            if let Ok(bytes) = std::fs::read(p) {
                // plotters keeps fonts for the process's life.
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok()
                {
                    return Ok(p.clone());
                }
            }
        }
        Err(format!(
            "no TTF font for the plot's text (set REDJIT_PLOT_FONT=/path/to/font.ttf; looked in {})",
            FONT_CANDIDATES.join(", ")
        ))
    });
    r.as_ref()
        .map(|_| ())
        .map_err(|e| CliError::failure(e.clone()))
}

/// Draws `panels` one above the other into `path`.
pub fn draw(path: &Path, title: &str, panels: &[Panel]) -> CliResult {
    let format = format_of(path)?;
    ensure_font()?;
    if panels.is_empty() {
        return Err(CliError::failure("nothing to plot"));
    }
    // Each panel is tall enough for its legend (drawn to the right of the chart).
    let heights: Vec<u32> = panels.iter().map(panel_height).collect();
    let size = (1300, heights.iter().sum::<u32>() + 40);
    let result = match format {
        Format::Svg => render(
            SVGBackend::new(path, size).into_drawing_area(),
            title,
            panels,
        ),
        Format::Png => render(
            BitMapBackend::new(path, size).into_drawing_area(),
            title,
            panels,
        ),
    };
    result.map_err(|e| CliError::failure(format!("cannot draw {}: {e}", path.display())))
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// Legend line height, pixels.
const LEGEND_LINE: u32 = 14;
/// Width of the legend column, pixels.
const LEGEND_WIDTH: u32 = 330;

fn panel_height(p: &Panel) -> u32 {
    (80 + LEGEND_LINE * (p.series.len() as u32 + 1)).max(480)
}

fn render<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    panels: &[Panel],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let mut rest = root.titled(title, ("sans-serif", 22))?;
    for panel in panels {
        let (area, below) = rest.split_vertically(panel_height(panel));
        draw_panel(&area, panel)?;
        rest = below;
    }
    root.present()?;
    Ok(())
}

/// x is log2(elements): sizes of a sweep are evenly spaced and labelled 2^k.
fn bounds(panel: &Panel) -> ((f64, f64), f64) {
    let all = panel
        .series
        .iter()
        .flat_map(|s| s.points.iter())
        .chain(panel.roofline.iter());
    let (mut lo, mut hi, mut top) = (f64::MAX, f64::MIN, 0.0f64);
    for &(x, y) in all {
        let x = x.max(1.0).log2();
        lo = lo.min(x);
        hi = hi.max(x);
        top = top.max(y);
    }
    if lo > hi {
        (lo, hi) = (0.0, 1.0);
    }
    ((lo.floor() - 0.5, hi.ceil() + 0.5), (top * 1.12).max(1.0))
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panel: &Panel,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (w, _) = area.dim_in_pixel();
    let (plot_area, legend_area) = area.split_horizontally(w.saturating_sub(LEGEND_WIDTH));
    let ((x0, x1), ymax) = bounds(panel);
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(&panel.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, 0.0..ymax)?;
    let ticks = ((x1 - x0).round() as usize).clamp(2, 40);
    chart
        .configure_mesh()
        .x_desc("elements per buffer")
        .y_desc("GB/s (read + write)")
        .x_labels(ticks)
        .x_label_formatter(&|x| {
            if (x - x.round()).abs() < 1e-6 {
                format!("2^{}", x.round() as i64)
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|y| format!("{y:.0}"))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    let sorted = |pts: &[(f64, f64)]| {
        let mut v: Vec<(f64, f64)> = pts.iter().map(|&(x, y)| (x.max(1.0).log2(), y)).collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        v
    };
    let mut legend: Vec<(String, RGBAColor, bool)> = Vec::new();
    if !panel.roofline.is_empty() {
        let roof = sorted(&panel.roofline);
        let style = ShapeStyle::from(&BLACK).stroke_width(2);
        chart.draw_series(DashedLineSeries::new(roof.clone(), 8, 5, style))?;
        chart.draw_series(
            roof.into_iter()
                .map(|p| Cross::new(p, 6, BLACK.stroke_width(2))),
        )?;
        legend.push((
            "device-to-device copy (roofline)".into(),
            BLACK.to_rgba(),
            true,
        ));
    }
    for (i, s) in panel.series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let pts = sorted(&s.points);
        chart.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?;
        chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
        legend.push((s.label.clone(), color, false));
    }
    let font = ("sans-serif", 11).into_font();
    for (i, (label, color, dashed)) in legend.iter().enumerate() {
        let y = 50 + (i as u32 * LEGEND_LINE) as i32;
        let width = if *dashed { 3 } else { 2 };
        legend_area.draw(&PathElement::new(
            vec![(4, y), (26, y)],
            color.stroke_width(width),
        ))?;
        legend_area.draw(&Text::new(label.clone(), (32, y - 6), font.clone()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Panel> {
        vec![Panel {
            title: "reduce_copy".into(),
            series: vec![
                Series {
                    label: "reduce_copy_u4_f32_bf16_TA_T_sum_rn".into(),
                    points: vec![(1e6, 900.0), (1.6e7, 2500.0), (2.7e8, 3050.0)],
                },
                Series {
                    label: "one point".into(),
                    points: vec![(2.7e8, 2000.0)],
                },
            ],
            roofline: vec![(1e6, 1000.0), (1.6e7, 2700.0), (2.7e8, 3000.0)],
        }]
    }

    #[test]
    fn formats_come_from_the_extension() {
        assert_eq!(format_of(Path::new("a.SVG")).unwrap(), Format::Svg);
        assert_eq!(format_of(Path::new("a.png")).unwrap(), Format::Png);
        assert!(format_of(Path::new("a.pdf")).is_err());
        assert!(format_of(Path::new("a")).is_err());
    }

    /// Both formats render (where the machine has a font; the CI machine does).
    #[test]
    fn svg_and_png_render() {
        if let Err(e) = ensure_font() {
            eprintln!("skipping: {e}");
            return;
        }
        let dir = std::env::temp_dir().join(format!("redjit-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["p.svg", "p.png"] {
            let path = dir.join(name);
            draw(&path, "test plot", &sample()).unwrap();
            let len = std::fs::metadata(&path).unwrap().len();
            assert!(len > 1000, "{name}: {len} bytes");
        }
        let svg = std::fs::read_to_string(dir.join("p.svg")).unwrap();
        assert!(svg.contains("roofline") && svg.contains("TA_T"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
