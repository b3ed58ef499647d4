//! DuckDB's `ORDER BY ALL [DESC]`: by every selected column, left to right. DataFusion's
//! parser reads `ALL` there as a column named `all` ("no column named all"); its planner
//! takes sqlparser's `ORDER BY ALL` only where each selected item is a column. So a
//! select list of its own becomes its positions (`ORDER BY 1 DESC, 2 DESC`), which order
//! by any expression; a list with `*` is left to the planner's `ORDER BY ALL`, which
//! knows the columns `*` stands for.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{Expr, OrderByExpr, OrderByKind, Query, SelectItem, SetExpr, Value, VisitorMut};

/// Rewrites `ORDER BY ALL` in every query ([`super::duckdb_forms::visit_statement`]).
pub struct OrderByAll;

impl VisitorMut for OrderByAll {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        let Some(order_by) = query.order_by.as_mut() else { return ControlFlow::Continue(()) };
        let OrderByKind::Expressions(exprs) = &order_by.kind else { return ControlFlow::Continue(()) };
        let [OrderByExpr { expr: Expr::Identifier(all), options, with_fill: None }] = exprs.as_slice() else {
            return ControlFlow::Continue(());
        };
        if all.quote_style.is_some() || !all.value.eq_ignore_ascii_case("all") {
            return ControlFlow::Continue(());
        }
        let options = *options;
        let columns = match query.body.as_ref() {
            SetExpr::Select(select)
                if !select.projection.iter().any(|item| matches!(item, SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..))) =>
            {
                Some(select.projection.len())
            }
            _ => None,
        };
        order_by.kind = match columns {
            Some(n) => OrderByKind::Expressions(
                (1..=n).map(|i| OrderByExpr { expr: Expr::value(Value::Number(i.to_string(), false)), options, with_fill: None }).collect(),
            ),
            None => OrderByKind::All(options),
        };
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use datafusion::sql::parser::DFParser;

    use super::*;
    use crate::engine::duckdb_forms::visit_statement;

    fn rewritten(sql: &str) -> String {
        let mut statements = DFParser::parse_sql(sql).unwrap();
        let _ = visit_statement(&mut statements[0], &mut OrderByAll);
        statements[0].to_string()
    }

    #[test]
    fn order_by_all_orders_by_every_selected_column() {
        assert_eq!(
            rewritten("SELECT type, count(*) FROM events GROUP BY ALL ORDER BY ALL DESC"),
            "SELECT type, count(*) FROM events GROUP BY ALL ORDER BY 1 DESC, 2 DESC"
        );
        assert_eq!(rewritten("SELECT * FROM events ORDER BY all"), "SELECT * FROM events ORDER BY ALL");
        assert_eq!(
            rewritten("SELECT \"all\" FROM t ORDER BY \"all\""),
            "SELECT \"all\" FROM t ORDER BY \"all\"",
            "a quoted name is a column"
        );
        assert_eq!(
            rewritten("SELECT a FROM (SELECT a, b FROM t ORDER BY ALL) ORDER BY a"),
            "SELECT a FROM (SELECT a, b FROM t ORDER BY 1, 2) ORDER BY a"
        );
    }
}
