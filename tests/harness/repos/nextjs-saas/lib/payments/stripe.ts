import Stripe from 'stripe';
import { redirect } from 'next/navigation';
import { eq } from 'drizzle-orm';
import { db } from '@/lib/db/drizzle';
import { teams, type Team } from '@/lib/db/schema';
import { getUser } from '@/lib/db/queries';

export const stripe = new Stripe(process.env.STRIPE_SECRET_KEY!, {
  apiVersion: '2025-05-28.basil'
});

export async function createCheckoutSession({ team, priceId }: { team: Team | null; priceId: string }) {
  const user = await getUser();
  if (!team || !user) {
    redirect(`/sign-up?redirect=checkout&priceId=${priceId}`);
  }

  const session = await stripe.checkout.sessions.create({
    payment_method_types: ['card'],
    line_items: [{ price: priceId, quantity: 1 }],
    mode: 'subscription',
    success_url: `${process.env.BASE_URL}/api/stripe/checkout?session_id={CHECKOUT_SESSION_ID}`,
    cancel_url: `${process.env.BASE_URL}/pricing`,
    customer: team.stripeCustomerId || undefined,
    client_reference_id: user.id.toString(),
    allow_promotion_codes: true,
    subscription_data: { trial_period_days: 14 }
  });

  redirect(session.url!);
}

export async function createCustomerPortalSession(team: Team) {
  if (!team.stripeCustomerId) {
    redirect('/pricing');
  }
  return stripe.billingPortal.sessions.create({
    customer: team.stripeCustomerId,
    return_url: `${process.env.BASE_URL}/dashboard`
  });
}

export async function handleSubscriptionChange(subscription: Stripe.Subscription) {
  const customerId = subscription.customer as string;
  const status = subscription.status;
  const [team] = await db.select().from(teams).where(eq(teams.stripeCustomerId, customerId)).limit(1);
  if (!team) {
    console.error('Team not found for Stripe customer:', customerId);
    return;
  }

  const active = status === 'active' || status === 'trialing';
  await db
    .update(teams)
    .set({
      stripeSubscriptionId: active ? subscription.id : null,
      stripeProductId: active ? (subscription.items.data[0]?.plan?.product as string) : null,
      subscriptionStatus: status,
      updatedAt: new Date()
    })
    .where(eq(teams.id, team.id));
}

export async function getStripePrices() {
  const prices = await stripe.prices.list({ expand: ['data.product'], active: true, type: 'recurring' });
  return prices.data.map((price) => ({
    id: price.id,
    productId: typeof price.product === 'string' ? price.product : price.product.id,
    unitAmount: price.unit_amount,
    interval: price.recurring?.interval
  }));
}

export async function getStripeProducts() {
  const products = await stripe.products.list({ active: true, expand: ['data.default_price'] });
  return products.data.map((product) => ({ id: product.id, name: product.name }));
}
