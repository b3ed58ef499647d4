//! A result table fitted to the terminal, as DuckDB prints one: the widest columns cut
//! (`…`) until the table fits, and when even narrow columns do not, the middle ones left
//! out for a `…` column. A value's lines stay lines (a plan of `EXPLAIN`, a message in
//! paragraphs), each cut alone. Borders as arrow's pretty tables draw them.

use console::{measure_text_width, truncate_str};

/// Columns are not cut narrower than this (unless their values are).
const NARROWEST: usize = 8;
/// Columns this narrow (ids, times, names) are cut only when cutting the wider ones to
/// [`NARROWEST`] is not enough.
const SHORT: usize = 24;
/// Columns are left out rather than the wider ones cut below this.
const LONG_SHOWN: usize = 16;

/// What fitting left out.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Fitted {
    pub text: String,
    pub hidden_columns: usize,
    pub cut_values: usize,
}

/// `header` and `rows` (a value per column each) as a table at most `width` characters wide.
pub fn fit_table(header: &[String], rows: &[Vec<String>], width: usize) -> Fitted {
    let header: Vec<Vec<String>> = header.iter().map(|name| lines_of(name)).collect();
    let rows: Vec<Vec<Vec<String>>> = rows.iter().map(|row| row.iter().map(|v| lines_of(v)).collect()).collect();
    let widest_line = |value: &Vec<String>| value.iter().map(|l| measure_text_width(l)).max().unwrap_or(0);
    let natural: Vec<usize> = (0..header.len())
        .map(|c| rows.iter().map(|row| widest_line(&row[c])).chain([widest_line(&header[c])]).max().unwrap_or(0))
        .collect();
    let shown = shown_columns(&natural, width);
    let hidden_columns = header.len() - shown.iter().flatten().count();
    let shown_natural: Vec<usize> = shown.iter().map(|c| c.map_or(1, |c| natural[c])).collect();
    let widths = capped(&shown_natural, width);

    // A row's shown cells, each its lines cut to its column's width, and how many were cut.
    let cells = |values: &[Vec<String>]| -> (Vec<Vec<String>>, usize) {
        let mut cut = 0;
        let cells = shown
            .iter()
            .zip(&widths)
            .map(|(column, &w)| match column {
                None => vec!["…".to_owned()],
                Some(c) => {
                    let mut value_cut = false;
                    let lines = values[*c]
                        .iter()
                        .map(|l| {
                            if measure_text_width(l) <= w {
                                return l.clone();
                            }
                            value_cut = true;
                            format!("{}…", truncate_str(l, w - 1, "").trim_end())
                        })
                        .collect();
                    cut += usize::from(value_cut);
                    lines
                }
            })
            .collect();
        (cells, cut)
    };
    let border: String = widths.iter().map(|w| format!("+{}", "-".repeat(w + 2))).chain(["+".to_owned()]).collect();
    let row_lines = |cells: Vec<Vec<String>>| -> Vec<String> {
        let height = cells.iter().map(Vec::len).max().unwrap_or(1).max(1);
        (0..height)
            .map(|i| {
                let padded = cells.iter().zip(&widths).map(|(cell, &w)| {
                    let line = cell.get(i).map_or("", String::as_str);
                    format!("| {line}{} ", " ".repeat(w - measure_text_width(line)))
                });
                padded.chain(["|".to_owned()]).collect()
            })
            .collect()
    };
    let mut lines = vec![border.clone()];
    lines.extend(row_lines(cells(&header).0));
    lines.push(border.clone());
    let mut cut_values = 0;
    for row in &rows {
        let (row, cut) = cells(row);
        cut_values += cut;
        lines.extend(row_lines(row));
    }
    lines.push(border);
    Fitted { text: lines.join("\n"), hidden_columns, cut_values }
}

/// A value's lines, tabs and other control characters (escape sequences) made spaces, so
/// that they cannot break the table's lines.
fn lines_of(value: &str) -> Vec<String> {
    value.lines().map(|line| line.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()).collect()
}

/// The table's width with columns of `widths`: `| a | b |`.
fn table_width(widths: impl Iterator<Item = usize>) -> usize {
    let (sum, n) = widths.fold((0, 0), |(sum, n), w| (sum + w, n + 1));
    sum + 3 * n + 1
}

/// The columns shown, in order, `None` standing for those left out: all of them when they
/// fit with those wider than [`SHORT`] at [`LONG_SHOWN`], else as many from both ends as
/// fit so beside a `…` column.
fn shown_columns(natural: &[usize], width: usize) -> Vec<Option<usize>> {
    let narrow = |c: usize| if natural[c] <= SHORT { natural[c] } else { LONG_SHOWN };
    if table_width((0..natural.len()).map(narrow)) <= width {
        return (0..natural.len()).map(Some).collect();
    }
    let (mut left, mut right) = (Vec::new(), Vec::new());
    let (mut from_left, mut from_right) = (0, natural.len());
    while from_left < from_right {
        let next = if left.len() <= right.len() { from_left } else { from_right - 1 };
        let kept = left.iter().chain(&right).copied().chain([next]);
        if table_width(kept.map(narrow).chain([1])) > width {
            break;
        }
        if next == from_left {
            left.push(next);
            from_left += 1;
        } else {
            right.push(next);
            from_right -= 1;
        }
    }
    left.iter().map(|c| Some(*c)).chain([None]).chain(right.iter().rev().map(|c| Some(*c))).collect()
}

/// Each column's width: its natural one, or capped where the table would not fit: the
/// columns wider than [`SHORT`] alone where that is enough, else every column.
fn capped(natural: &[usize], width: usize) -> Vec<usize> {
    let short_whole = cap_wider_than(SHORT, natural, width);
    if table_width(short_whole.iter().copied()) <= width { short_whole } else { cap_wider_than(0, natural, width) }
}

/// `natural`, the columns wider than `longer_than` capped at the largest width (not under
/// [`NARROWEST`]) that lets the table fit.
fn cap_wider_than(longer_than: usize, natural: &[usize], width: usize) -> Vec<usize> {
    let at = |cap: usize| natural.iter().map(move |&w| if w > longer_than { w.min(cap) } else { w });
    let (mut low, mut high) = (NARROWEST, natural.iter().copied().max().unwrap_or(0));
    while low < high {
        let mid = (low + high).div_ceil(2);
        if table_width(at(mid)) <= width { low = mid } else { high = mid - 1 }
    }
    at(low).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| (*v).to_owned()).collect()
    }

    #[test]
    fn a_table_that_fits_is_printed_whole() {
        let fitted = fit_table(&strings(&["id", "word"]), &[strings(&["1", "héllo"])], 80);
        assert_eq!(fitted.text, "+----+-------+\n| id | word  |\n+----+-------+\n| 1  | héllo |\n+----+-------+");
        assert_eq!((fitted.hidden_columns, fitted.cut_values), (0, 0));
    }

    #[test]
    fn the_widest_column_is_cut_to_fit() {
        let long = "a long message\tthat goes on and on about the reservation";
        let fitted = fit_table(&strings(&["id", "content"]), &[strings(&["e1", long]), strings(&["e2", "short"])], 30);
        let lines: Vec<&str> = fitted.text.lines().collect();
        assert!(lines.iter().all(|l| measure_text_width(l) <= 30), "{}", fitted.text);
        assert_eq!(lines[3], "| e1 | a long message that…  |");
        assert_eq!(lines[4], "| e2 | short                 |");
        assert_eq!((fitted.hidden_columns, fitted.cut_values), (0, 1));
    }

    #[test]
    fn a_value_of_several_lines_keeps_them_each_cut_alone() {
        let plan = "ProjectionExec: expr=[id@0 as id, content@1 as content]\n  DataSourceExec: file_groups={1 group}";
        let fitted = fit_table(&strings(&["plan_type", "plan"]), &[strings(&["physical_plan", plan])], 50);
        let lines: Vec<&str> = fitted.text.lines().collect();
        assert_eq!(lines.len(), 6, "{}", fitted.text);
        assert_eq!(lines[3], "| physical_plan | ProjectionExec: expr=[id@0 as… |");
        assert_eq!(lines[4], "|               |   DataSourceExec: file_groups… |");
        assert_eq!(fitted.cut_values, 1, "one value, two lines cut");
    }

    #[test]
    fn short_columns_stay_whole_while_the_long_ones_are_cut() {
        let header = strings(&["id", "type", "content", "result"]);
        let row = strings(&["evt-358b5846c6e42f00", "tool.result", &"x".repeat(300), &"y".repeat(300)]);
        let fitted = fit_table(&header, &[row], 100);
        let line = fitted.text.lines().nth(3).unwrap();
        assert!(line.starts_with("| evt-358b5846c6e42f00 | tool.result | xxx"), "{line}");
        assert_eq!(measure_text_width(line), 100, "{line}");
        assert_eq!(fitted.cut_values, 2);
    }

    #[test]
    fn columns_that_do_not_fit_are_left_out_from_the_middle() {
        let header: Vec<String> = (0..20).map(|i| format!("column_{i}")).collect();
        let row: Vec<String> = (0..20).map(|i| format!("value number {i}")).collect();
        let fitted = fit_table(&header, &[row], 60);
        assert!(fitted.text.lines().all(|l| measure_text_width(l) <= 60), "{}", fitted.text);
        let head = fitted.text.lines().nth(1).unwrap();
        assert!(head.starts_with("| column_0 ") && head.contains(" | … | column_19 "), "whole, from both ends: {head}");
        assert_eq!((fitted.hidden_columns, fitted.cut_values), (17, 0));
    }
}
