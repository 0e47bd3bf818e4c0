// The layout propagation pass. The earlier passes give layouts to the values
// that cannot be recomputed cheaply: a dot's result (its accumulator layout)
// and loads (their coalesced layout). This pass carries them forward to what
// is computed from those values: elementwise ops take their operands' layout,
// a reduction the slice of its operand's, expand_dims, reshape and trans the
// matching layout; a loop-carried value the layout its loop body yields it in
// (else its initial value's), an if's result its branches'. Then broadcasts
// take the layout their users compute in, which keeps softmax-style
// `x - max(x)[:, None]` in the accumulator's registers: the broadcast of a
// slice back into its parent layout moves no data.
//
// A pointer tensor a loop carries takes the layout of the load or store it
// addresses, so that it is advanced where it is used.
//
// Where an op's operands arrive in different layouts, the one derived from a
// dot wins over one derived from a load, and the others get an explicit
// gpu.convert_layout, as do loop inits, yields and branch results that arrive
// in another layout than their loop or if keeps. Values derived from no such
// anchor (ranges, splats, their arithmetic) are left to gpu-complete-layouts;
// the lowering recomputes them in whatever layout their users need.
#include "nvidia/propagate_layouts.h"

#include <unordered_map>

#include "nvidia/assign_layouts.h"
#include "nvidia/linear_layout.h"

namespace tilec::nvidia {

namespace {

using EncodingPtr = std::shared_ptr<const LayoutEncoding>;

constexpr int64_t kSmallLoadBytes = 1024;

// How strongly a value holds its layout: values derived from a dot's
// accumulator hold it over values derived from loads.
enum Anchor { kNone = 0, kLoad = 1, kDot = 2 };

bool isReduction(const Op &op) {
  switch (op.kind) {
  case OpKind::ReduceSum:
  case OpKind::ReduceMax:
  case OpKind::ReduceMin:
  case OpKind::ArgMax:
  case OpKind::ArgMin:
  case OpKind::ReduceWith:
    return true;
  default:
    return false;
  }
}

const LinearLayout *layoutOf(const Value *v) {
  const LayoutEncoding *e = layoutEncoding(v->type);
  return e ? &e->layout : nullptr;
}

class Propagation {
public:
  Propagation() = default;

  // Anchors are the encodings already in the types (dot results, loads).
  void seed(Block &block) {
    walk(block, [&](Op *op) {
      for (auto &r : op->results)
        if (layoutOf(r.get()))
          anchor_[r.get()] = op->kind == OpKind::Dot ? kDot : kLoad;
    });
  }

  // A pointer tensor a loop carries takes the layout of the load (or of the
  // value stored) it addresses: the loop then advances it in that layout, and
  // its initial value is computed there (or converted once, before the loop).
  void carriedPointers(Block &block) {
    walk(block, [&](Op *op) {
      const Value *like = op->kind == OpKind::Load    ? op->result()
                          : op->kind == OpKind::Store ? op->operand(1)
                                                      : nullptr;
      if (!like || !layoutOf(like))
        return;
      Value *ptr = op->operand(0);
      const Block *owner = ptr->owner;
      if (ptr->type.isTensor() && !layoutOf(ptr) && owner && owner->parent &&
          owner->parent->kind == OpKind::For && ptr->index > 0)
        set(ptr, encodingOf(like), kLoad);
    });
  }

  // Derives encodings until nothing changes. Loop-carried values first take
  // only what their body yields; with `fromInit`, also their initial value's.
  void forward(Block &block, bool fromInit) {
    bool changed = true;
    while (changed) {
      changed = false;
      walkBlock(block, [&](Op &op) { changed |= derive(op, fromInit); });
    }
  }

  // Broadcasts without a layout take the one their first encoded user computes in.
  void backward(Block &block) {
    walkBlock(block, [&](Op &op) {
      if (!op.has(ELEMENTWISE) || !layoutOf(op.result()))
        return;
      for (Value *v : op.operands)
        if (v->def && v->def->kind == OpKind::Broadcast && v->type.isTensor() && !layoutOf(v))
          set(v, encodingOf(op.result()), anchor_[op.result()]);
    });
  }

  // A cheap value computed only to feed an op in another layout (a causal
  // mask added to an accumulator) is computed in that layout instead: the
  // layout goes back through its chain of single-use elementwise ops,
  // broadcasts, expand_dims, splats and ranges of this block, and into a
  // small load at its start.
  void rematerialize(Block &block) {
    UseCounts counts = countUses(block);
    walkBlock(block, [&](Op &op) {
      if (op.results.empty() || !layoutOf(op.result()) ||
          (op.kind != OpKind::ConvertLayout && !op.has(ELEMENTWISE)))
        return;
      for (Value *v : op.operands)
        pushBack(v, encodingOf(op.result()), counts, op.parent);
    });
  }

  // Makes every operand whose layout differs from what its op computes in
  // arrive through an explicit conversion.
  void insertConversions(Block &block) {
    std::vector<Op *> ops;
    walk(block, [&](Op *op) { ops.push_back(op); });
    for (Op *op : ops) {
      if (op->has(ELEMENTWISE) && layoutOf(op->result())) {
        for (size_t i = 0; i < op->operands.size(); ++i)
          convertOperand(op, i, encodingOf(op->result()), /*onlyEncoded=*/true);
      } else if (op->kind == OpKind::For) {
        Block &body = *op->regions[0];
        for (size_t k = 1; k < body.args.size(); ++k)
          if (layoutOf(body.args[k].get())) {
            convertOperand(op, 2 + k, encodingOf(body.args[k].get()), false);
            convertOperand(body.terminator(), k - 1, encodingOf(body.args[k].get()), false);
          }
      } else if (op->kind == OpKind::If) {
        for (size_t k = 0; k < op->results.size(); ++k)
          if (layoutOf(op->result((int)k)))
            for (auto &region : op->regions)
              convertOperand(region->terminator(), k, encodingOf(op->result((int)k)), false);
      }
    }
  }

private:
  std::unordered_map<const Value *, int> anchor_;

  void pushBack(Value *v, const EncodingPtr &e, const UseCounts &counts, const Block *block) {
    Op *def = v->def;
    if (!singleUseIn(v, counts, block))
      return;
    // Already there: the chain above it may still need the layout.
    const LinearLayout *now = layoutOf(v);
    bool same = now && *now == e->layout;
    // A small load (a row of statistics broadcast over an accumulator) is
    // loaded straight in the layout its user needs, copies and all.
    if (!same && isSmallLoad(v)) {
      set(v, e, kLoad);
      return;
    }
    if (now && !same && !fromSmallLoad(v, counts, block))
      return;
    bool leaf = def->kind == OpKind::Splat || def->kind == OpKind::MakeRange ||
                def->kind == OpKind::Constant;
    bool pure = def->has(ELEMENTWISE) && def->has(PURE);
    if (!leaf && !pure && def->kind != OpKind::Broadcast && def->kind != OpKind::ExpandDims)
      return;
    if (!same)
      set(v, e, kNone);
    if (pure)
      for (Value *o : def->operands)
        pushBack(o, e, counts, block);
    const LinearLayout &l = e->layout;
    if (def->kind == OpKind::Broadcast) // the operand once per thread, copied by the broadcast
      pushBack(def->operand(0),
               std::make_shared<LayoutEncoding>(
                   "linear",
                   withoutRegisterCopies(projectLayout(l, def->operand(0)->type.shape))),
               counts, block);
    if (def->kind == OpKind::ExpandDims)
      pushBack(def->operand(0),
               std::make_shared<LayoutEncoding>("linear",
                                                sliceLayout(l, (int)def->intAttr("axis"))),
               counts, block);
  }


  // A tensor computed in `block` by an op there, read once.
  static bool singleUseIn(const Value *v, const UseCounts &counts, const Block *block) {
    return v->type.isTensor() && v->def && v->def->parent == block && useCount(counts, v) == 1;
  }
  static bool isSmallLoad(const Value *v) {
    return v->def->kind == OpKind::Load &&
           v->type.numel() * std::max(dtypeBytes(v->type.dtype), 1) <= kSmallLoadBytes;
  }

  // Whether `v` is a small load, or a single-use chain of views and cheap
  // math in `block` down to one (so that it may take another layout whole).
  bool fromSmallLoad(const Value *v, const UseCounts &counts, const Block *block) {
    const Op *def = v->def;
    if (!singleUseIn(v, counts, block))
      return false;
    if (def->kind == OpKind::Load)
      return isSmallLoad(v);
    bool view = def->kind == OpKind::Broadcast || def->kind == OpKind::ExpandDims;
    if (!view && !(def->has(ELEMENTWISE) && def->has(PURE)))
      return false;
    bool any = false;
    for (const Value *o : def->operands) {
      if (!o->type.isTensor())
        continue;
      const Op *od = o->def;
      bool leaf = od && (od->kind == OpKind::Splat || od->kind == OpKind::Constant ||
                         od->kind == OpKind::MakeRange);
      if (leaf)
        continue;
      if (!fromSmallLoad(o, counts, block))
        return false;
      any = true;
    }
    return any;
  }

  template <typename F> void walkBlock(Block &block, F &&fn) {
    walk(block, [&](Op *op) { fn(*op); });
  }

  static EncodingPtr encodingOf(const Value *v) {
    return std::static_pointer_cast<const LayoutEncoding>(v->type.encoding);
  }

  void set(Value *v, const EncodingPtr &e, int anchor) {
    v->type = v->type.withEncoding(e);
    anchor_[v] = anchor;
  }

  // Gives `v` layout `l` (under `kind`) if it has none; whether it changed.
  bool offer(Value *v, const std::string &kind, const LinearLayout &l, int anchor) {
    if (!v->type.isTensor() || layoutOf(v))
      return false;
    set(v, std::make_shared<LayoutEncoding>(kind, l), anchor);
    return true;
  }
  bool offer(Value *v, const Value *from) {
    if (!v->type.isTensor() || layoutOf(v) || !layoutOf(from))
      return false;
    set(v, encodingOf(from), anchor_[from]);
    return true;
  }

  // The encoded operand the op computes in: the strongest anchor, the first on ties.
  const Value *strongestOperand(const Op &op) {
    const Value *best = nullptr;
    for (const Value *v : op.operands)
      if (v->type.isTensor() && layoutOf(v) && (!best || anchor_[v] > anchor_[best]))
        best = v;
    return best;
  }

  bool derive(Op &op, bool fromInit) {
    if (op.has(ELEMENTWISE)) {
      const Value *from = strongestOperand(op);
      return from && offer(op.result(), from);
    }
    if (isReduction(op)) {
      const LinearLayout *in = layoutOf(op.operand(0));
      bool changed = false;
      if (in) {
        LinearLayout out = sliceLayout(*in, (int)op.intAttr("axis"));
        for (auto &r : op.results)
          changed |= offer(r.get(), "slice", out, anchor_[op.operand(0)]);
      }
      return changed;
    }
    const LinearLayout *in = op.operands.empty() ? nullptr : layoutOf(op.operand(0));
    switch (op.kind) {
    case OpKind::ExpandDims:
      return in && offer(op.result(), "linear", expandDimsLayout(*in, (int)op.intAttr("axis")),
                         anchor_[op.operand(0)]);
    case OpKind::Reshape:
      return in && offer(op.result(), "linear", reshapeLayout(*in, op.result()->type.shape),
                         anchor_[op.operand(0)]);
    case OpKind::Trans:
      return in && offer(op.result(), "linear", transLayout(*in, op.intsAttr("order")),
                         anchor_[op.operand(0)]);
    case OpKind::For: {
      Block &body = *op.regions[0];
      const Op &yield = *body.terminator();
      bool changed = false;
      for (size_t k = 1; k < body.args.size(); ++k) {
        Value *arg = body.args[k].get();
        changed |= offer(arg, yield.operand(k - 1));
        if (fromInit)
          changed |= offer(arg, op.operand(2 + k));
        changed |= offer(op.result((int)k - 1), arg);
      }
      return changed;
    }
    case OpKind::If: {
      bool changed = false;
      for (size_t k = 0; k < op.results.size(); ++k)
        for (auto &region : op.regions)
          changed |= offer(op.result((int)k), region->terminator()->operand(k));
      return changed;
    }
    default:
      return false;
    }
  }

  // Puts a conversion to `e` before `op`'s operand i when it arrives in
  // another layout (or, unless `onlyEncoded`, in none).
  void convertOperand(Op *op, size_t i, const EncodingPtr &e, bool onlyEncoded) {
    Value *v = op->operand(i);
    const LinearLayout *l = layoutOf(v);
    if (!v->type.isTensor() || (l && *l == e->layout) || (!l && onlyEncoded))
      return;
    op->operands[i] = convertBefore(op, v, e);
  }
};

} // namespace

void propagateLayouts(Function &fn, const GpuOptions &) {
  Propagation p;
  p.seed(*fn.body);
  p.carriedPointers(*fn.body);
  p.forward(*fn.body, /*fromInit=*/false);
  p.forward(*fn.body, /*fromInit=*/true);
  p.backward(*fn.body);
  p.rematerialize(*fn.body);
  p.insertConversions(*fn.body);
  p.rematerialize(*fn.body); // loop inits (pointer chains) computed where the loop wants them
}

} // namespace tilec::nvidia
