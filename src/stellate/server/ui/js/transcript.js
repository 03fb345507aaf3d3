// A session's log read as a conversation: user and assistant messages, tool cards, and whether each
// assistant message may be branched from (only the last message of a completed turn, as people expect:
// forking there keeps the whole turn and nothing after it).

export function conversationOf(events) {
  const items = [];
  const calls = new Map();
  let turn = null; // { number, items: [], start }
  for (const event of events) {
    const data = event.data || {};
    switch (event.type) {
      case 'turn/start':
        turn = { number: data.turn, items: [] };
        break;
      case 'user/message':
        push({ kind: 'user', seq: event.seq, text: data.content, time: event.time, images: data.images || [] });
        break;
      case 'assistant/message':
        push({ kind: 'assistant', seq: event.seq, text: data.content || '', time: event.time, model: data.model,
          usage: data.usage, calls: (data.tool_calls || []).length });
        break;
      case 'tool/call': {
        const waited = calls.get(data.call_id); // a call that waited for approval keeps its card
        if (waited) { waited.args = data.arguments; waited.time = event.time; break; }
        const card = { kind: 'tool', seq: event.seq, name: data.name, args: data.arguments, time: event.time, result: null };
        calls.set(data.call_id, card);
        push(card);
        break;
      }
      case 'tool/approval_requested': {
        const card = { kind: 'tool', seq: event.seq, name: data.name, args: data.arguments, time: event.time, result: null,
          callId: data.call_id, approval: { deadline: data.deadline, onTimeout: data.on_timeout, decision: null } };
        calls.set(data.call_id, card);
        push(card);
        break;
      }
      case 'tool/approval_decided': {
        const card = calls.get(data.call_id);
        if (card && card.approval) card.approval.decision = data;
        break;
      }
      case 'tool/result': {
        let card = calls.get(data.call_id);
        if (!card) { card = { kind: 'tool', seq: event.seq, name: data.name, args: null, time: event.time }; push(card); }
        card.result = data.content;
        card.images = data.images || [];
        card.isError = Boolean(data.is_error);
        card.duration = event.time - card.time;
        break;
      }
      case 'compaction/summary':
        push({ kind: 'note', seq: event.seq, note: 'summary', text: data.summary });
        break;
      case 'turn/end':
        if (turn) close(turn, data.reason);
        turn = null;
        break;
      default:
        break;
    }
    if (event.inherited) {
      const last = items[items.length - 1];
      if (last && last.seq === event.seq) last.inherited = true;
    }
  }
  if (turn) for (const item of turn.items) item.branch = { ok: false, why: 'open' };
  for (const item of items) if (item.kind === 'assistant' && !item.branch) item.branch = { ok: false, why: 'notLast' };
  return items;

  function push(item) {
    items.push(item);
    if (turn) { item.turn = turn.number; turn.items.push(item); }
  }

  function close(ended, reason) {
    const surface = ended.items.filter((i) => i.kind !== 'note');
    const last = surface[surface.length - 1];
    for (const item of ended.items) {
      if (item.kind !== 'assistant') continue;
      if (reason !== 'completed') item.branch = { ok: false, why: 'incomplete', reason };
      else if (item === last && item.text) item.branch = { ok: true };
      else item.branch = { ok: false, why: 'notLast' };
    }
  }
}
