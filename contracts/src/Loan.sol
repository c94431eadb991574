// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

interface IPrincipalSink {
    function onPrincipalRepaid(uint256 amount) external;
}

/// @notice Terms a loan adds to its principal, APR and term. A lending pool's loans use
/// `(address(0), 0, 30 days, true)`; loans between subaccounts and others come from a LoanRegistry.
struct LoanTerms {
    /// zero for unsecured loans
    address collateralToken;
    /// two decimals (12000 = 120.00 %), zero for unsecured loans
    uint256 maintenanceCollateralRatio;
    /// interest falls due every interval after activation
    uint256 paymentIntervalInSeconds;
    /// call `onPrincipalRepaid` on the lender (a lending pool) when principal comes back
    bool notifyLender;
}

/// @notice A fixed-term loan. The lender funds it (a lending pool sends the principal first and
/// calls `fund`; any other lender is pulled the principal by `fund`), the borrower commits (before or
/// after funding), draws the principal, pays interest and principal back to the lender.
///
/// Interest is simple interest on the outstanding principal at `apr` (two decimals) over 365 days,
/// accruing from activation (funded and committed) until the loan closes. Interest falls due every
/// `paymentIntervalInSeconds` from activation (`getNextPaymentDate`); a payment that clears the
/// interest owed moves the date on by one interval (at least past now). A called loan is due at the
/// end of its callback period. Past the due date plus the grace period the loan is late (`isLate`).
///
/// `loanState()` gives the original's state numbers: 0 inactive (never), 1 preapproved,
/// 2 funding_required, 3 funded, 4 active (also when called: see `callbackDeadline`), 5 cancelled,
/// 6 matured, 7 closed. `state()` keeps this contract's own enum (values 0-5 as before; 6 and 7 are
/// new).
contract Loan {
    using SafeERC20 for IERC20;

    event OnLoanFunded(uint256 amount);
    event OnBorrowerCommitment();
    event OnBorrowerWithdrawal(uint256 amount);
    event OnInterestsRepayment(uint256 amount);
    event OnPrincipalRepayment(uint256 amount);
    event OnLoanCalled(uint256 callbackPeriodInDays, uint256 gracePeriodInDays);
    event OnLoanMatured();
    event OnLoanClosed();
    event OnNewAprProposed(uint256 oldApr, uint256 newApr);
    event OnAprAcceptedByBorrower(uint256 oldApr, uint256 newApr);
    event OnCollateralRatioChanged(uint256 oldRatio, uint256 newRatio);
    event OnCollateralCaptured(uint256 amount);
    event OnCollateralClaimed(uint256 amount);
    event OnLoanCancelled(uint256 refunded);

    enum State {
        Preapproved,
        Funded,
        Active,
        Called,
        Matured,
        Closed,
        FundingRequired, // committed by the borrower, not funded yet
        Cancelled
    }

    // The original's loan state numbers (loanState()).
    uint8 internal constant PREAPPROVED = 1;
    uint8 internal constant FUNDING_REQUIRED = 2;
    uint8 internal constant FUNDED = 3;
    uint8 internal constant ACTIVE = 4;
    uint8 internal constant CANCELLED = 5;
    uint8 internal constant MATURED = 6;
    uint8 internal constant CLOSED = 7;

    uint256 internal constant YEAR = 365 days;

    address public immutable lender;
    address public immutable borrower;
    address public immutable principalToken;
    address public immutable collateralToken;
    uint256 public immutable initialPrincipalAmount;
    uint256 public immutable deployedDate;
    uint256 public immutable termDays;
    uint256 public immutable paymentIntervalInSeconds;
    bool public immutable notifyLender;
    uint256 public maintenanceCollateralRatio; // two decimals
    uint256 public apr; // two decimals: 1250 = 12.50%
    uint256 public proposedApr;
    uint256 public principalAmount; // outstanding
    uint256 public totalRepaid;
    uint256 public totalInterestRepaid;
    State public state;
    uint256 public fundedOn;
    uint256 public activatedOn;
    uint256 public nextPaymentDate;
    uint256 public gracePeriod = 5 days;
    /// end of the callback period once the lender called the loan, else 0
    uint256 public callbackDeadline;
    // interest accrued up to lastAccrual
    uint256 internal _interestAccrued;
    uint256 internal _lastAccrual;

    constructor(
        address lender_,
        address borrower_,
        address principalToken_,
        uint256 principal_,
        uint256 apr_,
        uint256 termDays_,
        LoanTerms memory terms
    ) {
        require(lender_ != address(0) && borrower_ != address(0) && lender_ != borrower_, "Loan: parties");
        require(terms.paymentIntervalInSeconds > 0, "Loan: interval");
        lender = lender_;
        borrower = borrower_;
        principalToken = principalToken_;
        initialPrincipalAmount = principal_;
        principalAmount = principal_;
        apr = apr_;
        termDays = termDays_;
        deployedDate = block.timestamp;
        collateralToken = terms.collateralToken;
        maintenanceCollateralRatio = terms.maintenanceCollateralRatio;
        paymentIntervalInSeconds = terms.paymentIntervalInSeconds;
        notifyLender = terms.notifyLender;
    }

    modifier onlyLender() {
        require(msg.sender == lender, "Loan: not lender");
        _;
    }

    modifier onlyBorrower() {
        require(msg.sender == borrower, "Loan: not borrower");
        _;
    }

    /// The lender funds the loan: what the loan holds short of the principal is pulled from it.
    function fund() external onlyLender {
        require(state == State.Preapproved || state == State.FundingRequired, "Loan: already funded");
        uint256 held = IERC20(principalToken).balanceOf(address(this));
        if (held < initialPrincipalAmount) {
            IERC20(principalToken).safeTransferFrom(msg.sender, address(this), initialPrincipalAmount - held);
        }
        fundedOn = block.timestamp;
        emit OnLoanFunded(initialPrincipalAmount);
        if (state == State.FundingRequired) _activate();
        else state = State.Funded;
    }

    function borrowerCommitment() external onlyBorrower {
        require(state == State.Funded || state == State.Preapproved, "Loan: not funded");
        emit OnBorrowerCommitment();
        if (state == State.Funded) _activate();
        else state = State.FundingRequired;
    }

    /// Before activation the lender may walk away: what the loan holds goes back to it.
    function cancel() external onlyLender {
        State s = state;
        require(s == State.Preapproved || s == State.Funded || s == State.FundingRequired, "Loan: not cancellable");
        state = State.Cancelled;
        uint256 held = IERC20(principalToken).balanceOf(address(this));
        if (held > 0) {
            IERC20(principalToken).safeTransfer(lender, held);
            if (notifyLender) IPrincipalSink(lender).onPrincipalRepaid(held);
        }
        emit OnLoanCancelled(held);
    }

    function borrowerWithdraw(uint256 amount) external onlyBorrower {
        require(state == State.Active, "Loan: not active");
        IERC20(principalToken).safeTransfer(borrower, amount);
        emit OnBorrowerWithdrawal(amount);
    }

    /// Interest goes straight to the lender.
    function repayInterests(uint256 amount) external onlyBorrower {
        require(state == State.Active || state == State.Called, "Loan: not active");
        IERC20(principalToken).safeTransferFrom(msg.sender, lender, amount);
        totalRepaid += amount;
        totalInterestRepaid += amount;
        if (callbackDeadline == 0 && _interestOwed() == 0) {
            uint256 next = nextPaymentDate + paymentIntervalInSeconds;
            uint256 afterNow = _periodEndAfter(block.timestamp);
            nextPaymentDate = next > afterNow ? next : afterNow;
        }
        emit OnInterestsRepayment(amount);
    }

    function repayPrincipal(uint256 amount) external onlyBorrower {
        require(state != State.Closed && state != State.Preapproved && state != State.Cancelled, "Loan: not open");
        require(state != State.FundingRequired, "Loan: not open");
        require(amount <= principalAmount, "Loan: too much");
        _accrue();
        IERC20(principalToken).safeTransferFrom(msg.sender, lender, amount);
        principalAmount -= amount;
        totalRepaid += amount;
        if (notifyLender) IPrincipalSink(lender).onPrincipalRepaid(amount);
        emit OnPrincipalRepayment(amount);
        if (principalAmount == 0) {
            state = State.Closed;
            emit OnLoanClosed();
        }
    }

    function proposeNewApr(uint256 newApr) external onlyLender {
        proposedApr = newApr;
        emit OnNewAprProposed(apr, newApr);
    }

    function acceptApr() external onlyBorrower {
        require(proposedApr > 0, "Loan: nothing proposed");
        _accrue();
        emit OnAprAcceptedByBorrower(apr, proposedApr);
        apr = proposedApr;
        proposedApr = 0;
    }

    function callLoan(uint256 callbackPeriodInDays, uint256 gracePeriodInDays) external onlyLender {
        require(state == State.Active, "Loan: not active");
        state = State.Called;
        callbackDeadline = block.timestamp + callbackPeriodInDays * 1 days;
        gracePeriod = gracePeriodInDays * 1 days;
        nextPaymentDate = callbackDeadline;
        emit OnLoanCalled(callbackPeriodInDays, gracePeriodInDays);
    }

    function markMatured() external {
        require(state == State.Active && block.timestamp >= deployedDate + termDays * 1 days, "Loan: not mature");
        state = State.Matured;
        emit OnLoanMatured();
    }

    function changeMaintenanceCollateralRatio(uint256 newRatio) external onlyLender {
        require(collateralToken != address(0), "Loan: unsecured");
        emit OnCollateralRatioChanged(maintenanceCollateralRatio, newRatio);
        maintenanceCollateralRatio = newRatio;
    }

    // ---- the original's views ---------------------------------------------------------------

    /// The original's state number (see the contract's notes).
    function loanState() external view returns (uint8) {
        State s = state;
        if (s == State.Preapproved) return PREAPPROVED;
        if (s == State.FundingRequired) return FUNDING_REQUIRED;
        if (s == State.Funded) return FUNDED;
        if (s == State.Active || s == State.Called) return ACTIVE;
        if (s == State.Cancelled) return CANCELLED;
        if (s == State.Matured) return MATURED;
        return CLOSED;
    }

    /// What the borrower owes now: interest accrued and not repaid, and the outstanding principal
    /// (zero before activation and once cancelled).
    function getDebt() external view returns (uint256 interestOwed, uint256 principalDebtOwed) {
        interestOwed = _interestOwed();
        principalDebtOwed = _principalOwed();
    }

    /// When the next payment falls due (0 before activation and once closed or cancelled).
    function getNextPaymentDate() external view returns (uint256) {
        State s = state;
        if (s == State.Active || s == State.Called || s == State.Matured) return nextPaymentDate;
        return 0;
    }

    /// The next payment: the interest owed by its due date, plus the principal when the loan is
    /// called or the date reaches the end of the term.
    function getUpcomingPayment() external view returns (uint256 amount, uint256 dueDate) {
        State s = state;
        if (s != State.Active && s != State.Called && s != State.Matured) return (0, 0);
        dueDate = nextPaymentDate;
        amount = _interestOwed();
        if (dueDate > block.timestamp) amount += _interestOver(dueDate - block.timestamp);
        if (s != State.Active || dueDate >= maturityDate()) amount += principalAmount;
    }

    /// Past its due date and the grace period with something still owed.
    function isLate() external view returns (bool) {
        State s = state;
        if (s != State.Active && s != State.Called && s != State.Matured) return false;
        return block.timestamp > nextPaymentDate + gracePeriod && (_interestOwed() > 0 || callbackDeadline > 0);
    }

    function maturityDate() public view returns (uint256) {
        return deployedDate + termDays * 1 days;
    }

    // ---- internals ------------------------------------------------------------------------

    function _activate() internal {
        state = State.Active;
        activatedOn = block.timestamp;
        _lastAccrual = block.timestamp;
        nextPaymentDate = block.timestamp + paymentIntervalInSeconds;
    }

    function _accruing() internal view returns (bool) {
        State s = state;
        return s == State.Active || s == State.Called || s == State.Matured;
    }

    function _interestOver(uint256 secs) internal view returns (uint256) {
        return (principalAmount * apr * secs) / (10_000 * YEAR);
    }

    function _accrued() internal view returns (uint256) {
        if (!_accruing()) return _interestAccrued;
        return _interestAccrued + _interestOver(block.timestamp - _lastAccrual);
    }

    function _accrue() internal {
        _interestAccrued = _accrued();
        _lastAccrual = block.timestamp;
    }

    function _interestOwed() internal view returns (uint256) {
        uint256 accrued = _accrued();
        return accrued > totalInterestRepaid ? accrued - totalInterestRepaid : 0;
    }

    function _principalOwed() internal view returns (uint256) {
        return _accruing() ? principalAmount : 0;
    }

    /// The first payment-period boundary (activation + k intervals) strictly after `t`.
    function _periodEndAfter(uint256 t) internal view returns (uint256) {
        uint256 start = activatedOn;
        if (t < start) return start + paymentIntervalInSeconds;
        return start + ((t - start) / paymentIntervalInSeconds + 1) * paymentIntervalInSeconds;
    }
}
