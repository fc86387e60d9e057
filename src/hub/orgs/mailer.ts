import type { Transporter } from 'nodemailer';
import type { Logger } from '../../shared/logger.js';
import type { Mailer } from '../ports.js';

/** Sends through SMTP; nodemailer is loaded at the first message, not when the hub starts. */
export function createMailer(smtp: { url: string; from: string }, log: Logger): Mailer {
  let transport: Promise<Transporter> | null = null;
  let closed = false;
  const open = () => {
    transport ??= import('nodemailer').then(({ default: nodemailer }) => {
      const t = nodemailer.createTransport(smtp.url);
      // Closed while loading: nothing may stay open.
      if (closed) t.close();
      return t;
    });
    return transport;
  };
  return {
    async send(mail) {
      try {
        if (closed) throw new Error('the mailer is closed');
        await (await open()).sendMail({ from: smtp.from, ...mail });
        return true;
      } catch (err) {
        log.warn({ err: (err as Error).message, to: mail.to }, 'e-mail not sent');
        return false;
      }
    },
    close() {
      closed = true;
      void transport?.then((t) => t.close());
    },
  };
}
