//! Costly text tests run only on the rows that the rest of their condition leaves open.
//!
//! DataFusion evaluates `a AND b` by computing `b` on every row unless at most a fifth of
//! the rows pass `a`, and its simplifier turns a `CASE WHEN a THEN b ELSE false END`
//! written to avoid that back into `a AND b`. So `type = 'msg.in' AND
//! is_confirmation(content)` ran the confirmation patterns on every agent message too,
//! although a quarter of the rows pass the type test. [`TextTestsLast`] rewrites, in the
//! physical plan's filters and projections, each `AND` and `OR` one side of which calls a
//! function that scans text ([`tracelake_udfs::scans_text`]) into a `CASE` that evaluates that side only on
//! the rows the other side does not decide: where only truth counts (a filter, a `CASE`
//! condition) or the other side is never null, so that the answers stay SQL's. Arguments
//! of window functions and aggregates are left as they are.

use std::sync::Arc;

use datafusion::arrow::datatypes::Schema;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Result, ScalarValue, config::ConfigOptions};
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{BinaryExpr, CaseExpr, Literal};
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::filter::{FilterExec, FilterExecBuilder};
use datafusion::physical_plan::projection::{ProjectionExec, ProjectionExpr};

/// Rewrites the conditions of a physical plan's filters and projections so that their
/// text tests run last.
#[derive(Debug, Default)]
pub struct TextTestsLast;

impl PhysicalOptimizerRule for TextTestsLast {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            if let Some(filter) = node.downcast_ref::<FilterExec>() {
                let predicate = tests_last(filter.predicate(), &filter.input().schema(), true)?;
                if predicate.transformed {
                    return Ok(Transformed::yes(Arc::new(FilterExecBuilder::from(filter).with_predicate(predicate.data).build()?)));
                }
            } else if let Some(projection) = node.downcast_ref::<ProjectionExec>() {
                let schema = projection.input().schema();
                let mut changed = false;
                let mut exprs = Vec::with_capacity(projection.expr().len());
                for e in projection.expr() {
                    let expr = tests_last(&e.expr, &schema, false)?;
                    changed |= expr.transformed;
                    exprs.push(ProjectionExpr { expr: expr.data, alias: e.alias.clone() });
                }
                if changed {
                    let input = Arc::clone(projection.input());
                    return Ok(Transformed::yes(Arc::new(ProjectionExec::try_new_with_schema_metadata(exprs, input, &node.schema())?)));
                }
            }
            Ok(Transformed::no(node))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "text_tests_last"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `expr` with each `AND` and `OR` over a text test turned into a `CASE` that runs the
/// test last, on the rows the other side leaves open. `truth`: only whether `expr` is true
/// matters (a filter's predicate, a `WHEN`'s condition), not whether it is false or null.
fn tests_last(expr: &Arc<dyn PhysicalExpr>, input: &Schema, truth: bool) -> Result<Transformed<Arc<dyn PhysicalExpr>>> {
    let mut changed = false;
    let mut visit = |e: &Arc<dyn PhysicalExpr>, truth: bool| -> Result<Arc<dyn PhysicalExpr>> {
        let t = tests_last(e, input, truth)?;
        changed |= t.transformed;
        Ok(t.data)
    };
    let rewritten: Arc<dyn PhysicalExpr> = if let Some(case) = expr.downcast_ref::<CaseExpr>() {
        let base = case.expr().map(|e| visit(e, false)).transpose()?;
        // With a base expression (`CASE x WHEN 1 …`), the WHENs are values, not conditions.
        let conditions = base.is_none();
        let mut when_then = Vec::with_capacity(case.when_then_expr().len());
        for (when, then) in case.when_then_expr() {
            when_then.push((visit(when, conditions)?, visit(then, false)?));
        }
        let otherwise = case.else_expr().map(|e| visit(e, false)).transpose()?;
        if !changed {
            return Ok(Transformed::no(Arc::clone(expr)));
        }
        Arc::new(CaseExpr::try_new(base, when_then, otherwise)?)
    } else if let Some(binary) = expr.downcast_ref::<BinaryExpr>()
        && matches!(binary.op(), Operator::And | Operator::Or)
    {
        let op = *binary.op();
        let (left, right) = (visit(binary.left(), truth)?, visit(binary.right(), truth)?);
        // Both are commutative: a side without a text test goes first, else the order
        // written stays (a chain of conditions is nested on the left).
        let (first, last) = if calls_text_test(&left)? && !calls_text_test(&right)? { (&right, &left) } else { (&left, &right) };
        // Outside a condition, a null `first` must still give what SQL's logic gives.
        if calls_text_test(last)? && (truth || !first.nullable(input)?) {
            return Ok(Transformed::yes(lazy(op, Arc::clone(first), Arc::clone(last))?));
        }
        if !changed {
            return Ok(Transformed::no(Arc::clone(expr)));
        }
        Arc::new(BinaryExpr::new(left, op, right))
    } else {
        let children = expr.children().into_iter().map(|c| visit(c, false)).collect::<Result<Vec<_>>>()?;
        if !changed {
            return Ok(Transformed::no(Arc::clone(expr)));
        }
        Arc::clone(expr).with_new_children(children)?
    };
    Ok(Transformed::yes(rewritten))
}

fn calls_text_test(expr: &Arc<dyn PhysicalExpr>) -> Result<bool> {
    let mut found = false;
    expr.apply(|e| {
        found = e.downcast_ref::<ScalarFunctionExpr>().is_some_and(|f| tracelake_udfs::scans_text(f.name()));
        Ok(if found { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
    })?;
    Ok(found)
}

/// `first AND last` as `CASE WHEN first THEN last ELSE false END`, `first OR last` as
/// `CASE WHEN first THEN true ELSE last END`: each side evaluated once, `last` only on the
/// rows `first` leaves open. The same as the operator where `first` is never null, and
/// where only truth matters.
fn lazy(op: Operator, first: Arc<dyn PhysicalExpr>, last: Arc<dyn PhysicalExpr>) -> Result<Arc<dyn PhysicalExpr>> {
    let case = if op == Operator::And {
        CaseExpr::try_new(None, vec![(first, last)], Some(boolean(false)))?
    } else {
        CaseExpr::try_new(None, vec![(first, boolean(true))], Some(last))?
    };
    Ok(Arc::new(case))
}

fn boolean(value: bool) -> Arc<dyn PhysicalExpr> {
    Arc::new(Literal::new(ScalarValue::Boolean(Some(value))))
}

#[cfg(test)]
mod tests {
    use datafusion::physical_plan::displayable;

    use crate::engine::session::{EngineOptions, memory_session};
    use crate::redact::Redactor;

    /// The physical plan of `query`, as `EXPLAIN` shows it, after `setup`.
    async fn plan(setup: &str, query: &str) -> String {
        let ctx = memory_session(Vec::new(), Redactor::builtin(), &EngineOptions::default()).await.unwrap();
        if !setup.is_empty() {
            ctx.sql(setup).await.unwrap().collect().await.unwrap();
        }
        let plan = ctx.sql(query).await.unwrap().create_physical_plan().await.unwrap();
        displayable(plan.as_ref()).indent(true).to_string()
    }

    const ANSWERS: &str = "CREATE TABLE answers AS VALUES (1, true, 'is it?'), (2, CAST(NULL AS BOOLEAN), CAST(NULL AS VARCHAR))";

    #[tokio::test]
    async fn a_filter_tests_text_only_where_the_rest_holds() {
        let shown = plan(ANSWERS, "SELECT column1 FROM answers WHERE is_question(column3) AND column1 > 4").await;
        assert!(shown.contains("FilterExec: CASE WHEN column1@0 > 4 THEN is_question(column3@1) ELSE false END"), "{shown}");
    }

    #[tokio::test]
    async fn a_projection_rewrites_only_where_null_cannot_change_the_answer() {
        let shown = plan(ANSWERS, "SELECT column1 > 4 AND is_question(column3), column2 AND is_question(column3) FROM answers").await;
        assert!(shown.contains("CASE WHEN column1@0 > 4 THEN is_question(column3@2) ELSE false END"), "{shown}");
        assert!(shown.contains("column2@1 AND is_question(column3@2)"), "a nullable side keeps the operator: {shown}");
    }

    #[tokio::test]
    async fn consequential_calls_test_confirmations_on_messages_of_their_kind() {
        let shown = plan("", "SELECT * FROM consequential_calls").await;
        assert!(shown.contains("is_confirmation"), "{shown}");
        assert!(!shown.contains("AND is_confirmation"), "every row's text tested: {shown}");
    }
}
