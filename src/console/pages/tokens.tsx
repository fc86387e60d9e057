import { useState } from 'preact/hooks';
import { api, listAll } from '../api.js';
import { confirmRemove, FormDialog, type FormSpec, given, ShownOnce, text } from '../form.js';
import { useLive, useNow } from '../live.js';
import type { Token } from '../types.js';
import { Ago, Empty, ErrorNote, PageTitle, SkeletonRows } from '../ui.js';

/** The caller's own access tokens: make one (its secret shown once), see them, revoke them. */
export function TokensPage() {
  const now = useNow(30_000);
  const [dialog, setDialog] = useState<FormSpec | null>(null);
  const tokens = useLive(async () => listAll<'tokens/list', Token>('tokens/list', {}), [], 30_000);
  const create: FormSpec = {
    title: 'New access token',
    intro: <p class="muted">For the CLI and scripts (SVC_TOKEN). It acts as you, with your roles.</p>,
    fields: [
      { name: 'name', label: 'Name', required: true, placeholder: 'laptop CLI' },
      {
        name: 'expires_in_days',
        label: 'Expires after (days)',
        type: 'number',
        help: 'Never later than this session unless your password is given.',
      },
      { name: 'password', label: 'Your password (for a longer life)', type: 'password' },
    ],
    submit: 'Create token',
    async onSubmit(v) {
      const days = given(v.expires_in_days);
      const password = given(v.password);
      const made = (
        await api('tokens/create', {
          name: text(v.name),
          ...(days ? { expires_in_days: Number(days) } : {}),
          ...(password ? { password } : {}),
        })
      ).data;
      tokens.refresh();
      return <ShownOnce label={`Token ${made.name}`} value={made.token} />;
    },
  };
  const revoke = (t: Token) =>
    setDialog(
      confirmRemove(
        `token ${t.name}`,
        async () => {
          await api('tokens/revoke', { id: t.id });
          tokens.refresh();
        },
        t.kind === 'session' ? (
          <p>This is a sign-in session: revoking it signs that session out.</p>
        ) : undefined,
      ),
    );
  return (
    <>
      <PageTitle
        aside={
          <button type="button" class="primary" onClick={() => setDialog(create)}>
            New token
          </button>
        }
      >
        Access tokens
      </PageTitle>
      <FormDialog spec={dialog} onClose={() => setDialog(null)} />
      <ErrorNote error={tokens.error} what="Could not load your tokens" />
      <div class="table-wrap">
        <table class="tokens wide">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Kind</th>
              <th scope="col">Hint</th>
              <th scope="col">Created</th>
              <th scope="col">Expires</th>
              <th scope="col">Last used</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {tokens.data === undefined ? <SkeletonRows rows={3} cols={7} /> : null}
            {tokens.data?.map((t) => (
              <tr key={t.id}>
                <td>{t.name}</td>
                <td>{t.kind}</td>
                <td>
                  <code>{t.hint}</code>
                </td>
                <td>
                  <Ago at={t.created_at} now={now} />
                </td>
                <td>{t.expires_at === null ? 'never' : <Ago at={t.expires_at} now={now} />}</td>
                <td>
                  <Ago at={t.last_used_at} now={now} />
                </td>
                <td class="actions">
                  <button
                    type="button"
                    class="danger"
                    onClick={() => revoke(t)}
                    aria-label={`Revoke token ${t.name}`}
                  >
                    Revoke
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {tokens.data?.length === 0 ? <Empty>No tokens.</Empty> : null}
    </>
  );
}
