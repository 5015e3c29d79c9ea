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
    let size = (1100, 560 * panels.len() as u32);
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

fn render<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    panels: &[Panel],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let root = root.titled(title, ("sans-serif", 22))?;
    let areas = root.split_evenly((panels.len(), 1));
    for (panel, area) in panels.iter().zip(areas) {
        draw_panel(&area, panel)?;
    }
    root.present()?;
    Ok(())
}

fn bounds(panel: &Panel) -> ((f64, f64), f64) {
    let all = panel
        .series
        .iter()
        .flat_map(|s| s.points.iter())
        .chain(panel.roofline.iter());
    let (mut lo, mut hi, mut top) = (f64::MAX, f64::MIN, 0.0f64);
    for &(x, y) in all {
        lo = lo.min(x);
        hi = hi.max(x);
        top = top.max(y);
    }
    if lo > hi {
        (lo, hi) = (1.0, 2.0);
    }
    if lo == hi {
        (lo, hi) = (lo / 2.0, hi * 2.0);
    }
    ((lo / 1.3, hi * 1.3), (top * 1.12).max(1.0))
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panel: &Panel,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let ((x0, x1), ymax) = bounds(panel);
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .right_y_label_area_size(10)
        .build_cartesian_2d((x0..x1).log_scale(), 0.0..ymax)?;
    chart
        .configure_mesh()
        .x_desc("elements per buffer")
        .y_desc("GB/s (read + write)")
        .x_label_formatter(&|x| crate::sizes::fmt_size(x.round() as u64))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    let sorted = |pts: &[(f64, f64)]| {
        let mut v = pts.to_vec();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        v
    };
    if !panel.roofline.is_empty() {
        let roof = sorted(&panel.roofline);
        let style = ShapeStyle::from(&BLACK).stroke_width(2);
        chart
            .draw_series(DashedLineSeries::new(roof, 8, 5, style))?
            .label("device-to-device copy (roofline)")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK.stroke_width(2)));
    }
    for (i, s) in panel.series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let pts = sorted(&s.points);
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
            .label(s.label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 12))
        .draw()?;
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
