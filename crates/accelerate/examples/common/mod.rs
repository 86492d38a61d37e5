//! What several examples share: writing an image as a PNG.

/// Writes 8-bit pixels (`color` says how many bytes each takes) as a PNG.
pub fn write_png(
    path: &str,
    width: usize,
    height: usize,
    color: png::ColorType,
    pixels: &[u8],
) -> Result<(), Box<dyn std::error::Error>> {
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut encoder = png::Encoder::new(file, width as u32, height as u32);
    encoder.set_color(color);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(pixels)?;
    writer.finish()?;
    Ok(())
}
