// The layout completion pass: after propagation, the values no anchor (a dot,
// a load) reached have no encoding: ranges, splats, constants and the math on
// them, reductions and scans of those, what atomics and inline asm return.
// Each gets the layout the lowering computes it in, in program order, from
// its operands' encodings (so every tensor of GPU IR carries one):
//   - ranges, splats, constants: the default blocked layout of their shape;
//   - expand_dims, reshape, trans: the layout derived from the operand's; a
//     broadcast to the operand's own shape, the operand's; else the default;
//   - casts: the operand's; other elementwise ops, the first operand that
//     cannot be recomputed (a load's value), else the first that is not a
//     splat, else the default;
//   - reductions: the slice of the operand's layout; scans and sorts: the
//     scan layout of their shape; gathers, atomics, inline asm and dots on
//     the CUDA cores: the first operand's that is not a splat, else the
//     default; histograms, the default;
//   - a loop's carried value: its initial value's (propagation gave those
//     its body computes from an encoded value theirs); an if's result, its
//     then-branch's; a while's, its condition's.
// Then every operand an op reads in another layout than it holds (an
// elementwise op's, an access's, a loop's initial and yielded values...) and
// that cannot be recomputed where it is read gets an explicit
// gpu.convert_layout. What is left implicit is recomputation: a value computed
// from ranges, splats and constants is computed again in its reader's layout.
#include "nvidia/complete_layouts.h"

#include <map>
#include <unordered_map>

#include "nvidia/assign_layouts.h"
#include "nvidia/linear_layout.h"
#include "nvidia/lowering.h"

namespace tilec::nvidia {

namespace {

using EncodingPtr = std::shared_ptr<const LayoutEncoding>;

const LinearLayout *layoutOf(const Value *v) {
  const LayoutEncoding *e = layoutEncoding(v->type);
  return e ? &e->layout : nullptr;
}

class Completion {
public:
  Completion(const Function &fn, const GpuOptions &opts)
      : minBytes_(minAccessBytes(fn)), numWarps_(opts.numWarps) {}

  void block(Block &b) {
    for (auto &op : b.ops)
      visit(*op);
  }

  // Every operand an op reads in another layout than the one it holds, and
  // that cannot be recomputed there (a load's value, a reduction's), arrives
  // through an explicit gpu.convert_layout: data moving between threads shows
  // in the IR. (Cheap values are recomputed where they are read; splats are
  // free in any layout.)
  void convertHeld(Block &b) {
    std::vector<Op *> ops;
    walk(b, [&](Op *op) { ops.push_back(op); });
    for (Op *op : ops)
      reads(*op, [&](size_t i, const Value *in) {
        Value *v = op->operand(i);
        const LinearLayout *have = layoutOf(v), *want = layoutOf(in);
        if (!v->type.isTensor() || !have || !want || *have == *want || uniform(v) ||
            recomputable(v, recomputable_))
          return;
        op->operands[i] = convertBefore(op, v, encodingOf(in));
      });
  }

private:
  int minBytes_, numWarps_;
  std::map<std::vector<int64_t>, EncodingPtr> defaults_;
  std::unordered_map<const Value *, bool> recomputable_;

  EncodingPtr defaultEncoding(const std::vector<int64_t> &shape) {
    EncodingPtr &e = defaults_[shape];
    if (!e)
      e = std::make_shared<LayoutEncoding>("blocked",
                                           defaultBlockedLayout(shape, minBytes_, numWarps_));
    return e;
  }
  static EncodingPtr encodingOf(const Value *v) {
    return std::static_pointer_cast<const LayoutEncoding>(v->type.encoding);
  }
  static void give(Value *v, EncodingPtr e) {
    if (v->type.isTensor() && !layoutOf(v))
      v->type = v->type.withEncoding(std::move(e));
  }
  static void give(Value *v, const std::string &kind, LinearLayout l) {
    if (v->type.isTensor() && !layoutOf(v))
      v->type = v->type.withEncoding(std::make_shared<LayoutEncoding>(kind, std::move(l)));
  }

  // A value the lowering holds as one register repeated (a splat): any
  // layout is free for it, so ops take their layout from other operands.
  static bool uniform(const Value *v) {
    const Op *def = v->def;
    if (!v->type.isTensor() || !def)
      return false;
    switch (def->kind) {
    case OpKind::Constant:
    case OpKind::Splat:
      return true;
    case OpKind::Broadcast:
    case OpKind::ExpandDims:
      return !def->operand(0)->type.isTensor() || uniform(def->operand(0));
    case OpKind::Reshape:
      return !def->operand(0)->type.isTensor();
    case OpKind::Cast:
    case OpKind::Bitcast:
    case OpKind::IntToPtr:
    case OpKind::PtrToInt:
    case OpKind::ConvertLayout:
      return uniform(def->operand(0));
    default:
      return false;
    }
  }

  // The encoding of the first tensor operand in [0, count) that is not a
  // splat, else the default one of `shape`.
  EncodingPtr firstHeld(const Op &op, size_t count, const std::vector<int64_t> &shape) {
    for (size_t k = 0; k < count && k < op.operands.size(); ++k)
      if (op.operand(k)->type.isTensor() && !uniform(op.operand(k)))
        return encodingOf(op.operand(k));
    return defaultEncoding(shape);
  }

  EncodingPtr elementwise(const Op &op) {
    EncodingPtr chosen;
    for (const Value *v : op.operands) {
      if (!v->type.isTensor() || uniform(v))
        continue;
      bool cheap = recomputable(v, recomputable_);
      if (!chosen || !cheap)
        chosen = encodingOf(v);
      if (!cheap)
        break;
    }
    return chosen ? chosen : defaultEncoding(op.result()->type.shape);
  }

  // Calls read(i, in) for each operand i the lowering reads in the layout of
  // value `in` (the op's result, or the block argument it flows into).
  template <typename F> static void reads(Op &op, F &&read) {
    auto all = [&](size_t from, size_t to, const Value *in) {
      for (size_t i = from; i < to && i < op.operands.size(); ++i)
        read(i, in);
    };
    bool tensorResult = !op.results.empty() && op.result()->type.isTensor();
    switch (op.kind) {
    case OpKind::Load:
    case OpKind::InlineAsm:
    case OpKind::AtomicRMW:
    case OpKind::AtomicCAS:
    case OpKind::AtomicLoad:
      if (tensorResult)
        all(0, op.operands.size(), op.result());
      return;
    case OpKind::AtomicPoll:
      if (tensorResult)
        all(0, 2, op.result());
      return;
    case OpKind::AtomicStore:
      if (op.operand(0)->type.isTensor())
        for (size_t i = 0; i < op.operands.size(); ++i)
          if (i != 1)
            read(i, op.operand(1));
      return;
    case OpKind::Gather:
      read(1, op.result());
      return;
    case OpKind::For: {
      const Block &body = *op.regions[0];
      for (size_t k = 1; k < body.args.size(); ++k)
        read(2 + k, body.args[k].get());
      return;
    }
    case OpKind::While: {
      const Block &before = *op.regions[0];
      for (size_t k = 0; k < before.args.size(); ++k)
        read(k, before.args[k].get());
      return;
    }
    case OpKind::Yield: {
      const Op *parent = op.parent ? op.parent->parent : nullptr;
      if (!parent)
        return;
      if (parent->kind == OpKind::For)
        for (size_t k = 0; k < op.operands.size(); ++k)
          read(k, op.parent->args[k + 1].get());
      else if (parent->kind == OpKind::If)
        for (size_t k = 0; k < op.operands.size(); ++k)
          read(k, parent->result((int)k));
      else if (parent->kind == OpKind::While) // the after region's: into the before region
        for (size_t k = 0; k < op.operands.size(); ++k)
          read(k, parent->regions[0]->args[k].get());
      return;
    }
    case OpKind::Condition: {
      const Op *loop = op.parent->parent;
      for (size_t k = 1; k < op.operands.size(); ++k)
        read(k, loop->regions[1]->args[k - 1].get());
      return;
    }
    default:
      if (op.has(ELEMENTWISE) && tensorResult)
        all(0, op.operands.size(), op.result());
      return;
    }
  }

  void visit(Op &op) {
    if (op.kind == OpKind::For) {
      Block &body = *op.regions[0];
      for (size_t k = 1; k < body.args.size(); ++k)
        give(body.args[k].get(), encodingOf(op.operand(2 + k)));
      for (size_t k = 1; k < body.args.size(); ++k)
        give(op.result((int)k - 1), encodingOf(body.args[k].get()));
      block(body);
      return;
    }
    if (op.kind == OpKind::If) {
      for (auto &region : op.regions)
        block(*region);
      const Op &yield = *op.regions[0]->terminator();
      for (size_t k = 0; k < op.results.size(); ++k)
        give(op.result((int)k), encodingOf(yield.operand(k)));
      return;
    }
    if (op.kind == OpKind::While) {
      Block &before = *op.regions[0], &after = *op.regions[1];
      for (size_t k = 0; k < before.args.size(); ++k)
        give(before.args[k].get(), encodingOf(op.operand(k)));
      block(before);
      const Op &cond = *before.terminator();
      for (size_t k = 0; k + 1 < cond.operands.size(); ++k) {
        give(after.args[k].get(), encodingOf(cond.operand(k + 1)));
        give(op.result((int)k), encodingOf(cond.operand(k + 1)));
      }
      block(after);
      return;
    }
    for (auto &region : op.regions)
      block(*region);
    bool tensors = false;
    for (auto &res : op.results)
      tensors |= res->type.isTensor();
    if (!tensors)
      return;
    Value *r = op.result();
    const std::vector<int64_t> &shape = r->type.shape;
    const Value *x = op.operands.empty() ? nullptr : op.operand(0);
    const LinearLayout *in = x ? layoutOf(x) : nullptr;
    switch (op.kind) {
    case OpKind::Constant:
    case OpKind::Splat:
    case OpKind::MakeRange:
    case OpKind::Histogram:
      give(r, defaultEncoding(shape));
      return;
    case OpKind::Broadcast:
      if (x->type.isTensor() && x->type.shape == shape)
        give(r, encodingOf(x));
      else
        give(r, defaultEncoding(shape));
      return;
    case OpKind::ExpandDims:
      if (in)
        give(r, "linear", expandDimsLayout(*in, (int)op.intAttr("axis")));
      else
        give(r, defaultEncoding(shape));
      return;
    case OpKind::Reshape:
      if (in)
        give(r, "linear", reshapeLayout(*in, shape));
      else
        give(r, defaultEncoding(shape));
      return;
    case OpKind::Trans:
      if (in)
        give(r, "linear", transLayout(*in, op.intsAttr("order")));
      return;
    case OpKind::Cast:
    case OpKind::Bitcast:
    case OpKind::IntToPtr:
    case OpKind::PtrToInt:
      if (in)
        give(r, encodingOf(x));
      return;
    case OpKind::ReduceSum:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
    case OpKind::ArgMax:
    case OpKind::ArgMin:
    case OpKind::ReduceWith: {
      LinearLayout out = sliceLayout(*in, (int)op.intAttr("axis"));
      for (auto &res : op.results)
        give(res.get(), "slice", out);
      return;
    }
    case OpKind::CumSum:
    case OpKind::ScanWith:
    case OpKind::Sort: {
      int axis = op.kind == OpKind::Sort ? x->type.rank() - 1 : (int)op.intAttr("axis");
      auto e = std::make_shared<LayoutEncoding>(
          "scan", scanLayout(shape, axis, numWarps_, op.kind == OpKind::Sort ? 8 : 1));
      for (auto &res : op.results)
        give(res.get(), e);
      return;
    }
    case OpKind::Gather:
      give(r, op.operand(1)->type.isTensor() && !uniform(op.operand(1)) ? encodingOf(op.operand(1))
                                                                        : defaultEncoding(shape));
      return;
    case OpKind::AtomicRMW:
    case OpKind::AtomicCAS:
    case OpKind::AtomicLoad:
    case OpKind::AtomicPoll:
      if (x->type.isTensor())
        give(r,
             firstHeld(op, op.kind == OpKind::AtomicPoll ? 2 : op.operands.size(), x->type.shape));
      return;
    case OpKind::InlineAsm: {
      EncodingPtr e = firstHeld(op, op.operands.size(), shape);
      for (auto &res : op.results)
        give(res.get(), e);
      return;
    }
    case OpKind::Dot: { // on the CUDA cores: in the accumulator's layout
      const Value *acc = op.operand(2);
      give(r, acc->type.isTensor() && !uniform(acc) ? encodingOf(acc) : defaultEncoding(shape));
      return;
    }
    default:
      if (op.has(ELEMENTWISE) && r->type.isTensor())
        give(r, elementwise(op));
      return;
    }
  }
};

} // namespace

void completeLayouts(Function &fn, const GpuOptions &opts) {
  Completion c(fn, opts);
  c.block(*fn.body);
  c.convertHeld(*fn.body);
}

} // namespace tilec::nvidia
