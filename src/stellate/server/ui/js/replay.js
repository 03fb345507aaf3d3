// The replay view (#/replay/ID): run a branch's user messages again from a chosen turn, with another model,
// system prompt or profile, into a new branch beside it. Each turn streams as it runs (SSE: a replay_turn event,
// then that turn's events); when the last one is done the comparison of the two branches opens.

import { api, sid, sse } from './api.js';
import { fill, h } from './dom.js';
import { t } from './i18n.js';
import { forest } from './live.js';
import { capabilities, emptyState, errorNode, field, go } from './shared.js';

export function mount(container, params) {
  const page = new ReplayPage(container, params.id);
  return () => page.destroy();
}

class ReplayPage {
  constructor(container, id) {
    this.id = id;
    this.controller = new AbortController();
    this.body = h('div', { class: 'replay-body' });
    fill(container, h('section', { class: 'page replay-page' }, h('h1', { text: t('nav.replay') }), this.body));
    if (!id) emptyState(this.body, t('replay.pick'));
    else this.load();
  }

  destroy() { this.controller.abort(); }

  async load() {
    let detail;
    let caps = { models: [], profiles: [] };
    try {
      detail = await api(`/sessions/${sid(this.id)}`);
      caps = await capabilities().catch(() => caps);
    } catch (error) {
      emptyState(this.body, errorNode(error));
      return;
    }
    if (!detail.turn_count) { emptyState(this.body, t('replay.noTurns')); return; }
    this.detail = detail;
    const fromTurn = h('select', {}, Array.from({ length: detail.turn_count }, (_, i) =>
      h('option', { value: i + 1, text: String(i + 1) })));
    const model = h('select', {}, h('option', { value: '', text: t('replay.sameModel') }),
      caps.models.map((m) => h('option', { value: m.name, translate: 'no', text: `${m.name} (${m.provider} · ${m.model})` })));
    const profile = h('select', {}, h('option', { value: '', text: t('fork.noProfile') }),
      caps.profiles.map((p) => h('option', { value: p.name, translate: 'no', text: p.name })));
    const prompt = h('textarea', { rows: 3, placeholder: t('replay.promptPlaceholder') });
    const label = h('input', { type: 'text', placeholder: t('replay.labelPlaceholder') });
    this.error = h('p', { class: 'error', role: 'alert' });
    this.progress = h('ol', { class: 'replay-progress', 'aria-live': 'polite' });
    this.run = h('button', { type: 'submit', class: 'primary', text: t('replay.submit') });
    const form = h('form', { class: 'replay-form', onsubmit: (event) => {
      event.preventDefault();
      const body = { from_turn: Number(fromTurn.value) };
      if (model.value) body.llm = model.value;
      if (profile.value) body.profile = profile.value;
      if (prompt.value.trim()) body.system_prompt = prompt.value;
      if (label.value.trim()) body.label = label.value.trim();
      this.start(body);
    } },
      h('p', {}, t('replay.of'), ' ', h('a', { href: '#/chat/' + encodeURIComponent(this.id), translate: 'no', text: detail.label || this.id }),
        ' · ', t('common.turns', { n: detail.turn_count })),
      field(t('replay.fromTurn'), fromTurn, t('replay.fromTurnHint')),
      field(t('replay.model'), model),
      caps.profiles.length ? field(t('fork.profile'), profile) : null,
      field(t('fork.systemPrompt'), prompt),
      field(t('fork.label'), label),
      this.error,
      h('div', { class: 'buttons' }, this.run));
    fill(this.body, form, this.progress);
  }

  async start(body) {
    this.run.disabled = true;
    fill(this.error);
    fill(this.progress);
    let current = null;
    let branch = null;
    let finished = false;
    try {
      await sse(`/sessions/${sid(this.id)}/replay`, {
        method: 'POST', body, signal: this.controller.signal,
        onEvent: (type, data) => {
          if (type === 'branch') { branch = data.session; forest.refresh(0); }
          else if (type === 'replay_turn') current = this.step(data);
          else if (type === 'text' && current) current.reply.textContent += data.text;
          else if (type === 'turn_finished' && current) this.done(current, data.result);
          else if (type === 'problem') fill(this.error, errorNode(data));
          else if (type === 'replay_finished') finished = true;
        },
      });
    } catch (error) {
      if (!this.controller.signal.aborted) fill(this.error, errorNode(error));
    }
    this.run.disabled = false;
    if (finished && branch) go(`#/compare/${encodeURIComponent(this.id)}/${encodeURIComponent(branch.id)}`);
  }

  step(data) {
    const reply = h('div', { class: 'replay-reply', translate: 'no' });
    const state = h('span', { class: 'badge running', text: t('replay.running') });
    const item = h('li', { class: 'replay-step', dataset: { turn: data.source_turn } },
      h('div', { class: 'replay-head' }, h('strong', { text: t('replay.step', { turn: data.source_turn, index: data.index, total: data.total }) }), ' ', state),
      h('div', { class: 'replay-user', translate: 'no', text: data.content }), reply);
    this.progress.append(item);
    return { item, reply, state };
  }

  done(step, result) {
    step.reply.textContent = result.content;
    step.state.className = 'badge ' + (result.reason === 'completed' ? 'done' : 'archived');
    step.state.textContent = t('compare.reason.' + result.reason);
  }
}
