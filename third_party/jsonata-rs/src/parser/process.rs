use crate::{Error, Result};
use std::mem::take;

use super::*;

impl Ast {
    pub fn process(self) -> Result<Ast> {
        let mut cx = Ancestry::default();
        let mut ast = process_ast(&mut cx, self)?;
        // Lucille patch: a `%` with no step to be the parent of.
        if matches!(ast.kind, AstKind::Parent(..)) || !ast.seeking_parent.is_empty() {
            return Err(Error::S0217ParentNotDerivable(
                ast.char_index,
                "the top level".to_string(),
            ));
        }
        cx.label(&mut ast);
        Ok(ast)
    }
}

pub fn process_ast(cx: &mut Ancestry, node: Ast) -> Result<Ast> {
    let mut node = node;
    let keep_array = node.keep_array;

    let mut result = match node.kind {
        AstKind::Name(..) => process_name(node)?,
        AstKind::Block(..) => process_block(cx, node)?,
        AstKind::Unary(..) => process_unary(cx, node)?,
        AstKind::Binary(..) => process_binary(cx, node)?,
        AstKind::GroupBy(ref mut lhs, ref mut rhs) => {
            process_group_by(cx, node.char_index, lhs, rhs)?
        }
        AstKind::OrderBy(ref mut lhs, ref mut rhs) => {
            process_order_by(cx, node.char_index, lhs, rhs)?
        }
        AstKind::Function {
            ref mut proc,
            ref mut args,
            ..
        } => {
            process_function(cx, proc, args)?;
            let mut seeking = Vec::new();
            for arg in args.iter() {
                push_ancestry(&mut seeking, arg);
            }
            node.seeking_parent.extend(seeking);
            node
        }
        AstKind::Lambda { ref mut body, .. } => {
            process_lambda(cx, body)?;
            node
        }
        AstKind::Ternary { .. } => process_ternary(cx, node)?,
        AstKind::Transform { .. } => process_transform(cx, node)?,
        // Lucille patch: the parent operator (was `unimplemented!()`): a new slot.
        AstKind::Parent(..) => {
            node.kind = AstKind::Parent(cx.new_slot());
            node
        }
        _ => node,
    };

    if keep_array {
        result.keep_array = true;
    }

    Ok(result)
}

// Turn a Name into a Path with a single step
fn process_name(node: Ast) -> Result<Ast> {
    let char_index = node.char_index;
    let keep_singleton_array = node.keep_array;
    let mut result = Ast::new(AstKind::Path(vec![node]), char_index);
    result.keep_singleton_array = keep_singleton_array;
    Ok(result)
}

// Process each expression in a block
fn process_block(cx: &mut Ancestry, node: Ast) -> Result<Ast> {
    let mut node = node;
    if let AstKind::Block(ref mut exprs) = node.kind {
        let mut seeking = Vec::new();
        for expr in exprs {
            *expr = process_ast(cx, take(expr))?;
            push_ancestry(&mut seeking, expr);
        }
        node.seeking_parent.extend(seeking);
    }
    Ok(node)
}

fn process_ternary(cx: &mut Ancestry, node: Ast) -> Result<Ast> {
    let mut node = node;
    if let AstKind::Ternary {
        ref mut cond,
        ref mut truthy,
        ref mut falsy,
    } = node.kind
    {
        *cond = Box::new(process_ast(cx, take(cond))?);
        *truthy = Box::new(process_ast(cx, take(truthy))?);
        let mut seeking = Vec::new();
        push_ancestry(&mut seeking, cond);
        push_ancestry(&mut seeking, truthy);
        if let Some(ref mut falsy) = falsy {
            *falsy = Box::new(process_ast(cx, take(falsy))?);
            push_ancestry(&mut seeking, falsy);
        }
        node.seeking_parent.extend(seeking);
    }

    Ok(node)
}

fn process_transform(cx: &mut Ancestry, node: Ast) -> Result<Ast> {
    let mut node = node;
    if let AstKind::Transform {
        ref mut pattern,
        ref mut update,
        ref mut delete,
    } = node.kind
    {
        *pattern = Box::new(process_ast(cx, take(pattern))?);
        *update = Box::new(process_ast(cx, take(update))?);
        if let Some(ref mut delete) = delete {
            *delete = Box::new(process_ast(cx, take(delete))?);
        }
    }

    Ok(node)
}

fn process_unary(cx: &mut Ancestry, node: Ast) -> Result<Ast> {
    let mut node = node;

    match node.kind {
        // Pre-process negative numbers
        AstKind::Unary(UnaryOp::Minus(value)) => {
            let mut result = process_ast(cx, *value)?;
            match result.kind {
                AstKind::Number(ref mut v) => {
                    *v = -*v;
                    Ok(result)
                }
                _ => {
                    let mut seeking = Vec::new();
                    push_ancestry(&mut seeking, &result);
                    let mut negated = Ast::new(
                        AstKind::Unary(UnaryOp::Minus(Box::new(result))),
                        node.char_index,
                    );
                    negated.seeking_parent = seeking;
                    Ok(negated)
                }
            }
        }

        // Process all of the expressions in an array constructor
        AstKind::Unary(UnaryOp::ArrayConstructor(ref mut exprs)) => {
            let mut seeking = Vec::new();
            for expr in exprs {
                *expr = process_ast(cx, take(expr))?;
                push_ancestry(&mut seeking, expr);
            }
            node.seeking_parent.extend(seeking);
            Ok(node)
        }

        // Process all the keys and values in an object constructor
        AstKind::Unary(UnaryOp::ObjectConstructor(ref mut object)) => {
            let mut seeking = Vec::new();
            for pair in object {
                let key = take(&mut pair.0);
                let value = take(&mut pair.1);
                *pair = (process_ast(cx, key)?, process_ast(cx, value)?);
                push_ancestry(&mut seeking, &pair.0);
                push_ancestry(&mut seeking, &pair.1);
            }
            node.seeking_parent.extend(seeking);
            Ok(node)
        }

        _ => unreachable!(),
    }
}

fn process_binary(cx: &mut Ancestry, node: Ast) -> Result<Ast> {
    let mut node = node;

    match node.kind {
        AstKind::Binary(BinaryOp::Map, ref mut lhs, ref mut rhs) => {
            process_path(cx, node.char_index, lhs, rhs)
        }
        AstKind::Binary(BinaryOp::Predicate, ref mut lhs, ref mut rhs) => {
            process_predicate(cx, node.char_index, lhs, rhs)
        }
        AstKind::Binary(BinaryOp::FocusBind, ref mut lhs, ref mut rhs) => {
            process_focus_bind(cx, node.char_index, node.keep_array, lhs, rhs)
        }
        AstKind::Binary(BinaryOp::IndexBind, ref mut lhs, ref mut rhs) => {
            process_index_bind(cx, node.char_index, lhs, rhs)
        }
        AstKind::Binary(ref op, ref mut lhs, ref mut rhs) => {
            *lhs = Box::new(process_ast(cx, take(lhs))?);
            *rhs = Box::new(process_ast(cx, take(rhs))?);
            // As in JSONata: `~>` passes no `%` up, `:=` only its right side's.
            let mut seeking = Vec::new();
            if *op == BinaryOp::Apply && (lhs.keep_array || rhs.keep_array) {
                // Lucille patch: `x ~> $f()[]` keeps a singleton array (the `[]` marks the
                // call, which `~>` evaluates itself).
                node.keep_array = true;
            }
            if !matches!(op, BinaryOp::Apply | BinaryOp::Bind) {
                push_ancestry(&mut seeking, lhs);
            }
            if *op != BinaryOp::Apply {
                push_ancestry(&mut seeking, rhs);
            }
            node.seeking_parent.extend(seeking);
            Ok(node)
        }
        _ => Ok(node),
    }
}

fn process_path(
    cx: &mut Ancestry,
    char_index: usize,
    lhs: &mut Box<Ast>,
    rhs: &mut Box<Ast>,
) -> Result<Ast> {
    let left_step = process_ast(cx, take(lhs))?;
    let mut rest = process_ast(cx, take(rhs))?;

    // If the left_step is a path itself, start with that. Otherwise, start a new path
    let mut result = if matches!(left_step.kind, AstKind::Path(_)) {
        left_step
    } else if let AstKind::Parent(slot) = left_step.kind {
        // Lucille patch: a path starting with `%` looks for its parent further out.
        let mut path = Ast::new(AstKind::Path(vec![left_step]), char_index);
        path.seeking_parent = vec![slot];
        path
    } else {
        Ast::new(AstKind::Path(vec![left_step]), char_index)
    };

    if let AstKind::Path(ref mut steps) = result.kind {
        if let AstKind::Path(ref mut rest_steps) = rest.kind {
            // If the rest is a path, merge in the steps
            steps.append(rest_steps);
        } else {
            // If there are predicates on the rest, they become stages of the step
            rest.stages = rest.predicates.take();
            steps.push(rest);
        }

        let mut keep_singleton_array = false;
        let last_index = steps.len() - 1;

        for (step_index, step) in steps.iter_mut().enumerate() {
            match step.kind {
                // Steps can't be literal values other than strings
                AstKind::Number(..) | AstKind::Bool(..) | AstKind::Null => {
                    return Err(Error::S0213InvalidStep(step.char_index, "TODO".to_string()));
                }

                // Steps that are string literals should become Names
                AstKind::String(ref s) => {
                    step.kind = AstKind::Name(s.clone());
                }

                // If the first or last step is an array constructor, it shouldn't be flattened
                AstKind::Unary(UnaryOp::ArrayConstructor(..)) => {
                    if step_index == 0 || step_index == last_index {
                        step.cons_array = true;
                    }
                }

                _ => (),
            }

            // Any step that signals keeping a singleton array should be plagged on the path
            keep_singleton_array = keep_singleton_array || step.keep_array;
        }

        result.keep_singleton_array = keep_singleton_array;
    }

    cx.resolve_ancestry(&mut result)?;
    Ok(result)
}

fn process_predicate(
    cx: &mut Ancestry,
    char_index: usize,
    lhs: &mut Box<Ast>,
    rhs: &mut Box<Ast>,
) -> Result<Ast> {
    let mut result = process_ast(cx, take(lhs))?;
    let mut in_path = false;

    let node = if let AstKind::Path(ref mut steps) = result.kind {
        in_path = true;
        let last_index = steps.len() - 1;
        &mut steps[last_index]
    } else {
        &mut result
    };

    // Predicates can't follow group-by
    if node.group_by.is_some() {
        return Err(Error::S0209InvalidPredicate(char_index));
    }

    let predicate = process_ast(cx, take(rhs))?;

    // Lucille patch: a `%` in the predicate one level up refers to this step's parent (the
    // step's input); those further up go on looking (JSONata's seekingParent).
    for &slot in &predicate.seeking_parent {
        if cx.level(slot) == 1 {
            cx.seek_parent(node, slot)?;
        } else {
            cx.go_up(slot);
        }
    }
    push_ancestry(&mut node.seeking_parent, &predicate);

    let filter = Ast::new(AstKind::Filter(Box::new(predicate)), char_index);

    // Add the filter to the node. If it's a step in a path, it goes in stages, otherwise in predicates
    if in_path {
        match node.stages {
            None => node.stages = Some(vec![filter]),
            Some(ref mut stages) => {
                stages.push(filter);
            }
        }
    } else {
        match node.predicates {
            None => node.predicates = Some(vec![filter]),
            Some(ref mut predicates) => {
                predicates.push(filter);
            }
        }
    }

    Ok(result)
}

fn process_focus_bind(
    cx: &mut Ancestry,
    char_index: usize,
    keep_array: bool,
    lhs: &mut Box<Ast>,
    rhs: &mut Box<Ast>,
) -> Result<Ast> {
    let mut result = process_ast(cx, take(lhs))?;
    let step = if let AstKind::Path(ref mut steps) = result.kind {
        // Left hand side was a path, so we want to operate on the last step
        let last_index = steps.len() - 1;
        &mut steps[last_index]
    } else {
        &mut result
    };

    if step.stages.is_some() || step.predicates.is_some() {
        return Err(Error::S0215BindingAfterPredicates(char_index));
    }

    if let AstKind::Sort(..) = step.kind {
        return Err(Error::S0216BindingAfterSort(char_index));
    }

    if keep_array {
        step.keep_array = true;
    }

    let focus = if let AstKind::Var(ref var) = rhs.kind {
        var.clone()
    } else {
        unreachable!()
    };
    step.focus = Some(focus);

    step.tuple = true;

    Ok(result)
}

fn process_index_bind(
    cx: &mut Ancestry,
    char_index: usize,
    lhs: &mut Box<Ast>,
    rhs: &mut Box<Ast>,
) -> Result<Ast> {
    let mut result = process_ast(cx, take(lhs))?;
    let mut is_path = false;

    let step = if let AstKind::Path(ref mut steps) = result.kind {
        // Left hand side was a path, so we want to operate on the last step
        is_path = true;
        let last_index = steps.len() - 1;
        &mut steps[last_index]
    } else {
        // Convert predicates to stages as this will become the first step in a new path
        if result.predicates.is_some() {
            result.stages = result.predicates.take();
        }
        &mut result
    };

    step.tuple = true;

    let index = if let AstKind::Var(ref var) = rhs.kind {
        var.clone()
    } else {
        unreachable!()
    };

    match step.stages {
        None => step.index = Some(index),
        Some(ref mut stages) => {
            let index = Ast::new(AstKind::Index(index), char_index);
            stages.push(index);
        }
    }

    // Turn it into a path
    Ok(if !is_path {
        Ast::new(AstKind::Path(vec![result]), char_index)
    } else {
        result
    })
}

fn process_group_by(
    cx: &mut Ancestry,
    char_index: usize,
    lhs: &mut Box<Ast>,
    rhs: &mut Object,
) -> Result<Ast> {
    let mut result = process_ast(cx, take(lhs))?;

    // Can only have a single grouping expression
    if result.group_by.is_some() {
        return Err(Error::S0210MultipleGroupBy(char_index));
    }

    // Process all the key, value pairs
    for pair in rhs.iter_mut() {
        let key = take(&mut pair.0);
        let value = take(&mut pair.1);
        *pair = (process_ast(cx, key)?, process_ast(cx, value)?);
    }

    result.group_by = Some((char_index, take(rhs)));

    Ok(result)
}

fn process_order_by(
    cx: &mut Ancestry,
    char_index: usize,
    lhs: &mut Box<Ast>,
    rhs: &mut SortTerms,
) -> Result<Ast> {
    let lhs = process_ast(cx, take(lhs))?;

    // If the left hand side is not a path, make it one
    let mut result = if matches!(lhs.kind, AstKind::Path(_)) {
        lhs
    } else {
        Ast::new(AstKind::Path(vec![lhs]), char_index)
    };

    // Process all the sort terms
    let mut seeking = Vec::new();
    for pair in rhs.iter_mut() {
        *pair = (process_ast(cx, take(&mut pair.0))?, pair.1);
        push_ancestry(&mut seeking, &pair.0);
    }

    if let AstKind::Path(ref mut steps) = result.kind {
        let mut sort = Ast::new(AstKind::Sort(take(rhs)), char_index);
        sort.seeking_parent = seeking;
        steps.push(sort);
    }

    cx.resolve_ancestry(&mut result)?;
    Ok(result)
}

fn process_function(cx: &mut Ancestry, proc: &mut Box<Ast>, args: &mut [Ast]) -> Result<()> {
    *proc = Box::new(process_ast(cx, take(&mut *proc))?);
    for arg in args.iter_mut() {
        *arg = process_ast(cx, take(arg))?;
    }
    Ok(())
}

fn process_lambda(cx: &mut Ancestry, body: &mut Box<Ast>) -> Result<()> {
    let new_body = process_ast(cx, take(body))?;
    let new_body = tail_call_optimize(new_body)?;
    *body = Box::new(new_body);
    Ok(())
}

fn tail_call_optimize(mut expr: Ast) -> Result<Ast> {
    match &mut expr.kind {
        // Lucille patch: not a partial application, which is a function value, not a call.
        AstKind::Function {
            is_partial: false, ..
        } if expr.predicates.is_none() => {
            let char_index = expr.char_index;
            let thunk = Ast::new(
                AstKind::Lambda {
                    name: String::from("thunk"),
                    args: vec![],
                    thunk: true,
                    signature: None,
                    body: Box::new(expr),
                },
                char_index,
            );

            Ok(thunk)
        }
        AstKind::Ternary { truthy, falsy, .. } => {
            *truthy = Box::new(tail_call_optimize(take(truthy))?);
            if let Some(inner) = falsy {
                *falsy = Some(Box::new(tail_call_optimize(take(inner))?));
            }
            Ok(expr)
        }
        AstKind::Block(statements) => {
            let length = statements.len();
            if length > 0 {
                statements[length - 1] = tail_call_optimize(take(&mut statements[length - 1]))?;
            }
            Ok(expr)
        }
        _ => Ok(expr),
    }
}

/*
    keep_array is used on individual nodes
    keep_singleton_array is used on Paths
    cons_array is for special handling of paths that start or end with an array constructor
    predicates is used on individual nodes
    stages are used in steps in a Path
*/

/// Lucille patch: the parent operator `%`, resolved as JSONata's parser does. Each `%` gets a
/// slot: the tuple binding (label `!<n>`) that will hold its parent, and how many steps up the
/// path that parent still is. Expressions pass the slots of their operands up
/// (`seeking_parent`); a path (or a predicate, or a sort) walks its steps back from the one
/// holding the `%`, and the step where the level reaches 0 becomes a tuple step that binds its
/// input under the slot's label (`ancestor`). After processing, `label` writes the final labels
/// into the tree.
#[derive(Debug, Default)]
pub struct Ancestry {
    /// Per slot: its label (two slots share one when they name the same step).
    labels: Vec<usize>,
    /// Per slot: steps up to the parent still to go.
    levels: Vec<usize>,
}

/// Adds the slots `value` seeks (and its own, if it is a `%`) to `seeking`.
fn push_ancestry(seeking: &mut Vec<usize>, value: &Ast) {
    seeking.extend_from_slice(&value.seeking_parent);
    if let AstKind::Parent(slot) = value.kind {
        seeking.push(slot);
    }
}

impl Ancestry {
    fn new_slot(&mut self) -> usize {
        let slot = self.labels.len();
        self.labels.push(slot);
        self.levels.push(1);
        slot
    }

    fn level(&self, slot: usize) -> usize {
        self.levels.get(slot).copied().unwrap_or(0)
    }

    fn go_up(&mut self, slot: usize) {
        if let Some(level) = self.levels.get_mut(slot) {
            *level = level.saturating_sub(1);
        }
    }

    /// Walks `node` (a step, backwards through a path or block) for `slot`'s parent.
    fn seek_parent(&mut self, node: &mut Ast, slot: usize) -> Result<()> {
        match node.kind {
            AstKind::Name(..) | AstKind::Wildcard => {
                self.go_up(slot);
                if self.level(slot) == 0 {
                    if let Some(existing) = node.ancestor {
                        // This step already binds a parent: share its label.
                        let label = self.labels.get(existing).copied().unwrap_or(existing);
                        if let Some(own) = self.labels.get_mut(slot) {
                            *own = label;
                        }
                    }
                    node.ancestor = Some(slot);
                    node.tuple = true;
                }
            }
            AstKind::Parent(..) => {
                if let Some(level) = self.levels.get_mut(slot) {
                    *level += 1;
                }
            }
            AstKind::Block(ref mut exprs) => {
                if let Some(last) = exprs.last_mut() {
                    self.seek_parent(last, slot)?;
                    node.tuple = true;
                }
            }
            AstKind::Path(ref mut steps) => {
                let mut index = steps.len();
                while index > 0 {
                    index -= 1;
                    self.seek_parent(&mut steps[index], slot)?;
                    if self.level(slot) == 0 {
                        break;
                    }
                }
                node.tuple = true;
            }
            _ => {
                return Err(Error::S0217ParentNotDerivable(
                    node.char_index,
                    format!("{:?}", std::mem::discriminant(&node.kind)),
                ))
            }
        }
        Ok(())
    }

    /// Resolves the slots that the last step of `path` seeks against the steps before it;
    /// those it cannot resolve, the path seeks further out.
    fn resolve_ancestry(&mut self, path: &mut Ast) -> Result<()> {
        let AstKind::Path(ref mut steps) = path.kind else {
            return Ok(());
        };
        let Some(last) = steps.last() else {
            return Ok(());
        };
        let mut slots = Vec::new();
        push_ancestry(&mut slots, last);
        let mut unresolved = Vec::new();
        for slot in slots {
            let mut index = steps.len() - 1;
            while self.level(slot) > 0 {
                if index == 0 {
                    unresolved.push(slot);
                    break;
                }
                index -= 1;
                // Contiguous steps that bind the focus count as one.
                while index > 0 && steps[index].focus.is_some() && steps[index - 1].focus.is_some()
                {
                    index -= 1;
                }
                self.seek_parent(&mut steps[index], slot)?;
            }
        }
        path.seeking_parent.extend(unresolved);
        Ok(())
    }

    /// Writes the final labels into the tree: `%`s and the steps they refer to.
    fn label(&self, node: &mut Ast) {
        let label = |slot: usize| self.labels.get(slot).copied().unwrap_or(slot);
        if let AstKind::Parent(ref mut slot) = node.kind {
            *slot = label(*slot);
        }
        if let Some(slot) = node.ancestor {
            node.ancestor = Some(label(slot));
        }
        node.seeking_parent = Vec::new();
        if let Some((_, ref mut object)) = node.group_by {
            for (key, value) in object {
                self.label(key);
                self.label(value);
            }
        }
        for list in [&mut node.predicates, &mut node.stages]
            .into_iter()
            .flatten()
        {
            for item in list {
                self.label(item);
            }
        }
        match node.kind {
            AstKind::Unary(UnaryOp::Minus(ref mut value)) => self.label(value),
            AstKind::Unary(UnaryOp::ArrayConstructor(ref mut items))
            | AstKind::Block(ref mut items)
            | AstKind::Path(ref mut items) => {
                for item in items {
                    self.label(item);
                }
            }
            AstKind::Unary(UnaryOp::ObjectConstructor(ref mut object))
            | AstKind::GroupBy(_, ref mut object) => {
                for (key, value) in object {
                    self.label(key);
                    self.label(value);
                }
            }
            _ => {}
        }
        match node.kind {
            AstKind::Binary(_, ref mut lhs, ref mut rhs) => {
                self.label(lhs);
                self.label(rhs);
            }
            AstKind::GroupBy(ref mut lhs, _) | AstKind::Filter(ref mut lhs) => self.label(lhs),
            AstKind::OrderBy(ref mut lhs, ref mut terms) => {
                self.label(lhs);
                for (term, _) in terms {
                    self.label(term);
                }
            }
            AstKind::Sort(ref mut terms) => {
                for (term, _) in terms {
                    self.label(term);
                }
            }
            AstKind::Function {
                ref mut proc,
                ref mut args,
                ..
            } => {
                self.label(proc);
                for arg in args {
                    self.label(arg);
                }
            }
            AstKind::Lambda { ref mut body, .. } => self.label(body),
            AstKind::Ternary {
                ref mut cond,
                ref mut truthy,
                ref mut falsy,
            } => {
                self.label(cond);
                self.label(truthy);
                if let Some(falsy) = falsy {
                    self.label(falsy);
                }
            }
            AstKind::Transform {
                ref mut pattern,
                ref mut update,
                ref mut delete,
            } => {
                self.label(pattern);
                self.label(update);
                if let Some(delete) = delete {
                    self.label(delete);
                }
            }
            _ => {}
        }
    }
}
